/* cudafilter — kernel sets for 1D (audio) streams, and kernel files.
 *
 * A kernel set holds the FIR taps a 1D engine applies. Its routing says how
 * channels map:
 *   CF_ROUTING_SHARED       one kernel, applied to every channel;
 *   CF_ROUTING_PER_CHANNEL  one kernel per channel (C kernels, C in, C out);
 *   CF_ROUTING_MATRIX       C_out x C_in kernels, y_o = sum_i h_oi * x_i
 *                           (true-stereo IRs; a filter bank: 1 input feeding
 *                           N band outputs with kernels of different lengths).
 * Kernels in one set may have different lengths. Kernel index for
 * per-channel is the channel; for matrix it is o * inputs + i. */
#ifndef CUDAFILTER_KERNEL_H
#define CUDAFILTER_KERNEL_H

#include <stddef.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest kernel accepted (taps): 2^24, about 350 s at 48 kHz. */
#define CF_KERNEL_MAX_TAPS ((size_t)1 << 24)
/* Most kernels in one set (C_out x C_in), and most channels of a stream. */
#define CF_KERNEL_MAX_COUNT 4096u
#define CF_MAX_CHANNELS 256u

typedef enum cf_routing {
  CF_ROUTING_SHARED,
  CF_ROUTING_PER_CHANNEL,
  CF_ROUTING_MATRIX
} cf_routing;

typedef struct cf_kernel cf_kernel;

/* A new kernel set with every kernel empty (length 0).
 * shared: outputs = inputs = 1; per-channel: outputs = inputs = C;
 * matrix: any outputs and inputs, each 1..CF_MAX_CHANNELS, with at most
 * CF_KERNEL_MAX_COUNT kernels in all (CF_E_INVALID beyond). The
 * constructors (new, new_shared, copy, load*) refuse out == NULL with
 * CF_E_INVALID. */
cf_status cf_kernel_new(cf_routing routing, unsigned outputs, unsigned inputs,
                        cf_kernel **out);
/* Convenience: a shared kernel set holding a copy of taps[0..len). */
cf_status cf_kernel_new_shared(const float *taps, size_t len, cf_kernel **out);
void cf_kernel_free(cf_kernel *k);
cf_status cf_kernel_copy(const cf_kernel *k, cf_kernel **out);
/* k's N kernels in their order read as an (N / inputs) x inputs matrix,
 * kernel j becoming entry j (output j / inputs, input j % inputs): a
 * true-stereo impulse response's four channels, as a WAV holds them
 * (L<-L, L<-R, R<-L, R<-R), for a stereo stream; what --routing matrix
 * (cudafilter) and routing=matrix (cudafir) make of per-channel kernels.
 * A matrix of `inputs` inputs comes back as a copy; CF_E_INVALID where N
 * is not a multiple of inputs (1..CF_MAX_CHANNELS) or the outputs would
 * be more than CF_MAX_CHANNELS. */
cf_status cf_kernel_as_matrix(const cf_kernel *k, unsigned inputs,
                              cf_kernel **out);

/* Copy taps into kernel `index`. Every tap must be finite; 1 <= len <=
 * CF_KERNEL_MAX_TAPS (len 0 is allowed for matrix entries: no path). */
cf_status cf_kernel_set(cf_kernel *k, unsigned index, const float *taps,
                        size_t len);
/* Multiply every tap by `gain` (linear). CF_E_INVALID, the set unchanged,
 * when gain is not finite or would make a tap overflow to infinity (taps
 * stay finite, as cf_kernel_set keeps them). */
cf_status cf_kernel_scale(cf_kernel *k, float gain);
/* The gain in dB every face takes (apply's --gain, cudafir's gain,
 * cudafilterd's gain): -CF_GAIN_DB_MAX..CF_GAIN_DB_MAX, a factor of 10^6
 * either way. */
#define CF_GAIN_DB_MAX 120.0

cf_routing cf_kernel_routing(const cf_kernel *k);
unsigned cf_kernel_outputs(const cf_kernel *k);
unsigned cf_kernel_inputs(const cf_kernel *k);
unsigned cf_kernel_count(const cf_kernel *k);
const float *cf_kernel_taps(const cf_kernel *k, unsigned index, size_t *len);
size_t cf_kernel_max_len(const cf_kernel *k);

/* Kernel files. The format is found from the content, not the name:
 *  - NumPy .npy (float32/float64, either byte order, C or Fortran order):
 *    1D -> shared, 2D (C x L) -> per-channel, 3D (C_out x C_in x L) -> matrix;
 *  - text: numbers separated by whitespace and/or commas, '#' starts a
 *    comment to the end of the line (LF or CR LF; CR in a file whose
 *    first line ends with a lone CR) -> shared (a UTF-8 byte order mark
 *    at the start is skipped). Numbers take a decimal point: a file
 *    without one that reads as written with decimal commas ("0,25" on
 *    each line, "0,25 0,5", "0,25, 0,5"; README.md, "Kernel files", has
 *    the rule: "1,2,1" is a list, "1, 0" two taps) is refused
 *    (CF_E_FORMAT), and so are two commas with no number between them;
 *  - any audio file libav decodes (WAV, FLAC, ...): each channel a kernel
 *    (mono -> shared, else per-channel), resampled with libswresample to
 *    `rate` when rate != 0 and differs from the file's, the taps scaled
 *    by file rate / `rate` so that the filter's gain stays as it was; the
 *    resampler's ring after the last sample kept (ceil(n * rate / file
 *    rate) + 16 * ceil(rate / file rate) + 8 taps), the ring before the
 *    first added to the first tap (the DC gain exact). Lossy codecs'
 *    priming is dropped (as the file states it: MP3's LAME header,
 *    Opus's pre-skip, an MP4's edit list; AAC without it, in ADTS or
 *    Matroska: its first frame, 1024 samples) and their padding after
 *    the stated length (an MP4's length in ms: up to 1 ms more kept).
 *    A file that decodes short of its stated length (beyond a lossy
 *    codec's priming, padding and two frames), or an Ogg file whose
 *    last page is cut or missing, is truncated (CF_E_FORMAT).
 * A file whose every tap is 0 is refused (CF_E_FORMAT, "is silent"): it
 * would mute a stream without a word; cf_kernel_new takes zeros.
 * Errors name the file, the position (byte, line:column or tap) and the
 * problem: truncated data, NaN/Inf, absurd sizes, unsupported dtype. */
cf_status cf_kernel_load(const char *path, unsigned rate, cf_kernel **out);
cf_status cf_kernel_load_text(const char *path, cf_kernel **out);
cf_status cf_kernel_load_npy(const char *path, cf_kernel **out);
/* CF_E_UNAVAILABLE when built without libav. */
cf_status cf_kernel_load_audio(const char *path, unsigned rate,
                               cf_kernel **out);

const char *cf_routing_name(cf_routing r);
/* "shared", "per-channel", "matrix". */
cf_status cf_routing_from_string(const char *s, cf_routing *out);

#ifdef __cplusplus
}
#endif
#endif
