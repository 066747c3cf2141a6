/* cudafilter command-line tool: helpers shared by the subcommands. */
#ifndef CF_CLI_H
#define CF_CLI_H

#include <stdbool.h>
#include <stddef.h>

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

/* Monotonic clock in seconds. */
double cli_now(void);

int cli_demo(int argc, char **argv);
/* `apply` (apply.c): audio files through libav. */
int cli_apply(int argc, char **argv);
/* `conv2d` (conv2d.c). */
int cli_conv2d(int argc, char **argv);

#endif
