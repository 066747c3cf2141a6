/* cudafilter command-line tool: helpers shared by the subcommands. */
#ifndef CF_CLI_H
#define CF_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <cudafilter/kernel2d.h>
#include <cudafilter/video.h>

#define CLI_EXIT_RUNTIME 1
#define CLI_EXIT_USAGE 2


/* "cudafilter: <message>" on stderr; returns CLI_EXIT_RUNTIME. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "cudafilter: <message>" plus a hint to `cudafilter [cmd] --help`;
 * returns CLI_EXIT_USAGE. cmd may be NULL. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Report getopt_long's ':' (missing value) or '?' (unknown option). */
int cli_bad_option(const char *cmd, int c, char **argv);

/* Strict number parsing: the whole string, in [lo, hi]. A usage error
 * naming the option is printed on failure. */
bool cli_parse_uint(const char *cmd, const char *opt, const char *s,
                    unsigned long lo, unsigned long hi, unsigned long *out);
bool cli_parse_double(const char *cmd, const char *opt, const char *s,
                      double lo, double hi, double *out);

/* write() until done, retrying on EINTR and short writes.
 * 0 on success, -1 with errno set. */
int cli_write_all(int fd, const void *buf, size_t len);

/* Once per engine (*told): a warning on stderr when backend auto has
 * left the device mid-stream, with the device's error. */
struct cf_engine;
void cli_note_fallback(const struct cf_engine *e, bool *told);

/* --backend, --threads and --device, the same in every command that
 * runs an engine: getopt_long table entries and their parsing. */
enum { CLI_E_BACKEND = 640, CLI_E_THREADS, CLI_E_DEVICE };
#define CLI_ENGINE_OPTIONS                                                    \
  {"backend", required_argument, NULL, CLI_E_BACKEND},                        \
      {"threads", required_argument, NULL, CLI_E_THREADS},                    \
      {"device", required_argument, NULL, CLI_E_DEVICE}
/* Take option c (CLI_E_*) with its value; 0 or an exit status after a
 * usage error naming the option. */
int cli_engine_option(const char *cmd, int c, const char *arg,
                      cf_backend *backend, unsigned *threads, int *device);

/* Monotonic clock in seconds. */
double cli_now(void);

int cli_demo(int argc, char **argv);
/* Video kernel and filter options, shared by conv2d and apply
 * (conv2d.c): option codes for getopt_long's tables. */
enum {
  CLI_V_KERNEL = 512, CLI_V_PRESET, CLI_V_SIZE, CLI_V_SIGMA, CLI_V_BORDER,
  CLI_V_CVAL, CLI_V_SCALE, CLI_V_BIAS, CLI_V_ABSOLUTE, CLI_V_COMPONENTS,
  CLI_V_ALGORITHM
};
typedef struct cli_video_opts {
  const char *kernel_path;
  const char *preset_name;
  cf_preset preset;
  unsigned long size;
  double sigma;
  bool have_size, have_sigma;
  bool have_cval, border_constant; /* --cval given; --border constant */
  const char *components; /* as given, checked against the format */
} cli_video_opts;
/* Take option c (CLI_V_*) with its value into o and cfg; 0 or an exit
 * status after a usage error naming the option. */
int cli_video_option(const char *cmd, int c, const char *arg,
                     cli_video_opts *o, cf_video_config *cfg);
/* Options that contradict each other; 0 or an exit status. */
int cli_video_check(const char *cmd, const cli_video_opts *o);
/* --components for format fmt: a mask (decimal or 0x hex) or a
 * comma-separated list of names; 0 or an exit status. */
int cli_video_components(const char *cmd, const char *s,
                         cf_pixel_format fmt, unsigned *out);
/* The kernel from the file or the preset; 0 or an exit status. */
int cli_video_kernel(const char *cmd, const cli_video_opts *o,
                     cf_kernel2d **k);

/* `apply` (apply.c, apply_video.c): media files through libav. */
int cli_apply(int argc, char **argv);
/* `conv2d` (conv2d.c). */
int cli_conv2d(int argc, char **argv);

#endif
