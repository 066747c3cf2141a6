/* libav, loaded on first use with dlopen. Linking it costs every process
 * about 35 ms at start (libavformat pulls in some 140 shared libraries),
 * while only audio kernel files and the demo's WAV output need it. The
 * pointers take their types from libav's own declarations, so a call
 * through cf_av->f(...) is checked exactly like a call to f(...). */
#ifndef CF_IO_AV_LAZY_H
#define CF_IO_AV_LAZY_H

#include <stdbool.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>

/* a stream's side data: on the stream before libavformat 61, in its
 * codec parameters from there on */
#if LIBAVFORMAT_VERSION_MAJOR < 61
#define CF_AV_SIDE_DATA(X) X(av_stream_new_side_data) X(av_stream_get_side_data)
#else
#define CF_AV_SIDE_DATA(X) X(av_packet_side_data_new) X(av_packet_side_data_get)
#endif

#define CF_AV_FUNCTIONS(X)                                                    \
  CF_AV_SIDE_DATA(X)                                                         \
  X(av_channel_layout_compare) X(av_channel_layout_copy)                     \
  X(av_channel_layout_default) X(av_channel_layout_describe) X(av_channel_layout_from_string)                \
  X(av_channel_layout_uninit) X(av_find_best_stream) X(av_frame_alloc)       \
  X(av_frame_free) X(av_frame_get_buffer) X(av_frame_make_writable)          \
  X(av_frame_unref) X(av_dict_copy) X(av_dict_free) X(av_dict_get)           \
  X(av_dict_set) X(av_dynarray_add_nofree) X(av_mallocz)                    \
  X(av_get_pix_fmt_name)                                                     \
  X(av_guess_codec) X(av_guess_format) X(av_log_default_callback)          \
  X(av_log_set_callback)                                                     \
  X(av_display_rotation_get) X(av_display_rotation_set)                     \
  X(av_pix_fmt_count_planes) X(av_guess_sample_aspect_ratio)                \
  X(av_guess_frame_rate) X(av_filename_number_test) X(av_freep)             \
  X(av_opt_set_double) X(av_opt_set_int) X(av_strdup)                       \
  X(av_pix_fmt_desc_get)                                                     \
  X(av_get_bytes_per_sample) X(av_get_bits_per_sample) X(av_get_packed_sample_fmt)                     \
  X(av_get_media_type_string) X(av_get_sample_fmt_name)                     \
  X(av_interleaved_write_frame) X(av_log_set_level) X(av_new_packet) X(av_packet_alloc)          \
  X(av_packet_free) X(av_packet_get_side_data) X(av_packet_rescale_ts)    \
  X(av_packet_unref)               \
  X(av_read_frame) X(av_rescale_q) X(av_sample_fmt_is_planar)                \
  X(av_strerror) X(av_write_trailer) X(avcodec_alloc_context3)               \
  X(avcodec_decode_subtitle2) X(avcodec_descriptor_get)                     \
  X(avcodec_descriptor_get_by_name) X(avcodec_encode_subtitle)              \
  X(avsubtitle_free)                                                         \
  X(avcodec_find_decoder) X(avcodec_find_encoder)                            \
  X(avcodec_find_best_pix_fmt_of_list) X(avcodec_find_encoder_by_name) X(avcodec_free_context)                    \
  X(avcodec_get_name) X(avcodec_open2) X(avcodec_parameters_from_context)\
  X(avcodec_parameters_copy) X(avcodec_parameters_to_context) X(avcodec_receive_frame)                  \
  X(avcodec_receive_packet) X(avcodec_send_frame) X(avcodec_send_packet)     \
  X(av_codec_get_id) X(av_codec_get_tag2)                                    \
  X(avformat_alloc_context) X(avformat_alloc_output_context2)               \
  X(avformat_close_input)                                                    \
  X(avformat_find_stream_info) X(avformat_free_context)                      \
  X(avformat_init_output)                                                    \
  X(avformat_new_stream) X(avformat_open_input) X(avformat_query_codec) X(avformat_write_header)     \
  X(av_malloc) X(avio_alloc_context) X(avio_context_free)                   \
  X(avio_closep) X(avio_seek) X(avio_size) X(av_image_get_buffer_size) X(avio_find_protocol_name) X(avio_open) X(avio_open2) X(swr_alloc_set_opts2)            \
  X(swr_convert)                                                             \
  X(swr_free) X(swr_get_out_samples) X(swr_init)

typedef struct cf_av_api {
#define CF_AV_POINTER(f) __typeof__(f) *f;
  CF_AV_FUNCTIONS(CF_AV_POINTER)
#undef CF_AV_POINTER
} cf_av_api;

/* Whether libav reads path as a URL of a protocol other than file:
 * "://" in it, or "NAME:" of a protocol libav has ("pipe:1", "md5:").
 * Anything else, file:... and file:///... included, is a local file,
 * named path without its "file:" prefix (cf_av_local). cf_av must be
 * loaded. */
bool cf_av_is_url(const char *path);
/* path without a "file:" prefix: the local file's own name. */
const char *cf_av_local(const char *path);
/* The name libav opens the local file `local` by (free()): "file:" +
 * local where libav would take what comes before a ':' for a protocol
 * ("take:2.wav", "a:b.wav", or a name itself starting "file:"), else
 * local as it is. cf_av must be loaded; NULL when out of memory. */
char *cf_av_file_name(const char *local);

/* The loaded functions, or NULL with *why saying what failed. Thread-safe;
 * after it returned non-NULL, cf_av may be used directly. */
const cf_av_api *cf_av_get(const char **why);
extern const cf_av_api *cf_av;

#endif
