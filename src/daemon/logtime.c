/* cudafilterd: the time at the start of every log line.
 *
 * A daemon's log is read after the fact (QA: a `nohup ... >> log` or
 * runit log had no time on any line: when a stream failed, a reload came
 * or a file finished could not be told). The lines come from the daemon,
 * from `apply`'s notes, from libav, ALSA, GLib and GStreamer, all through
 * stdio's stderr; so stderr (and stdout) become streams that put the time
 * in front of each line and write it to the same file descriptor at once
 * (nothing held back: a crash loses nothing already said). GLib's own
 * writer skips a stream without a file descriptor, so its messages are
 * formatted and written here. The systemd journal stamps lines itself:
 * there, by default, the lines go as they are. */
#define _GNU_SOURCE
#include "cfd.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef struct stamped {
  int fd;
  bool at_start; /* the next byte begins a line */
} stamped;

static stamped out_cookie = {STDOUT_FILENO, true};
static stamped err_cookie = {STDERR_FILENO, true};

/* "2026-12-02T02:42:15.123+0000 " in buf (at least 40 bytes). */
static size_t stamp_now(char *buf, size_t size)
{
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  time_t t = tv.tv_sec;
  localtime_r(&t, &tm);
  char date[24], zone[8];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  strftime(zone, sizeof zone, "%z", &tm);
  int n =
      snprintf(buf, size, "%s.%03d%s ", date, (int)(tv.tv_usec / 1000), zone);
  return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* fopencookie's write: under the stream's lock (one caller at a time).
 * Always "written": a log that is gone (closed, a pipe whose reader
 * left) must not turn into errors of the program. */
static ssize_t stamped_write(void *cookie, const char *buf, size_t size)
{
  stamped *s = cookie;
  size_t lines = 1;
  for (size_t i = 0; i < size; i++)
    lines += buf[i] == '\n';
  char *out = malloc(size + lines * 40);
  if (!out) { /* no room for the stamps: the text still goes */
    (void)!write(s->fd, buf, size);
    return (ssize_t)size;
  }
  size_t n = 0;
  for (size_t i = 0; i < size; i++) {
    if (s->at_start)
      n += stamp_now(out + n, 40);
    out[n++] = buf[i];
    s->at_start = buf[i] == '\n';
  }
  for (size_t done = 0; done < n;) {
    ssize_t w = write(s->fd, out + done, n - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    done += (size_t)w;
  }
  free(out);
  return (ssize_t)size;
}

static GLogWriterOutput stamped_log_writer(GLogLevelFlags level,
                                           const GLogField *fields,
                                           gsize n_fields, gpointer user)
{
  (void)user;
  const char *domain = NULL;
  for (gsize i = 0; i < n_fields; i++)
    if (!strcmp(fields[i].key, "GLIB_DOMAIN") && fields[i].length < 0)
      domain = fields[i].value;
  /* G_MESSAGES_DEBUG decides as it does for GLib's own writer */
  if (g_log_writer_default_would_drop(level, domain))
    return G_LOG_WRITER_HANDLED;
  char *text = g_log_writer_format_fields(level, fields, n_fields, FALSE);
  /* without the empty line GLib puts before a warning: a stamp alone */
  fprintf(stderr, "%s\n", text + strspn(text, "\n"));
  g_free(text);
  return G_LOG_WRITER_HANDLED;
}

/* Whether stderr is the systemd journal: JOURNAL_STREAM is "DEV:INODE"
 * of the stream systemd connected (a child whose stderr goes elsewhere
 * keeps the variable, so the descriptor is compared). */
static bool stderr_is_journal(void)
{
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  char end;
  if (!js || sscanf(js, "%llu:%llu%c", &dev, &ino, &end) != 2)
    return false;
  struct stat st;
  return fstat(STDERR_FILENO, &st) == 0 &&
         (unsigned long long)st.st_dev == dev &&
         (unsigned long long)st.st_ino == ino;
}

static FILE *stamped_stream(stamped *s)
{
  cookie_io_functions_t io = {.write = stamped_write};
  FILE *f = fopencookie(s, "w", io);
  if (f)
    setvbuf(f, NULL, _IONBF, 0); /* said at once, as stderr is */
  return f;
}

bool cfd_log_times_parse(const char *when, cfd_log_times *out)
{
  if (!strcmp(when, "auto"))
    *out = CFD_LOG_TIMES_AUTO;
  else if (!strcmp(when, "always"))
    *out = CFD_LOG_TIMES_ALWAYS;
  else if (!strcmp(when, "never"))
    *out = CFD_LOG_TIMES_NEVER;
  else
    return false;
  return true;
}

bool cfd_log_times_start(cfd_log_times when)
{
  if (when == CFD_LOG_TIMES_NEVER ||
      (when == CFD_LOG_TIMES_AUTO && stderr_is_journal()))
    return false;
  tzset();
  fflush(stdout);
  fflush(stderr);
  FILE *o = stamped_stream(&out_cookie), *e = stamped_stream(&err_cookie);
  if (!o || !e) {
    if (o)
      fclose(o);
    if (e)
      fclose(e);
    return false;
  }
  /* glibc's stdout and stderr are variables a program may set; the old
   * streams stay open on their descriptors, which the new ones write */
  stdout = o;
  stderr = e;
  g_log_set_writer_func(stamped_log_writer, NULL, NULL);
  return true;
}

void cfd_test_gate(const char *env)
{
  const char *gate = g_getenv(env);
  if (gate && *gate && g_file_test(gate, G_FILE_TEST_EXISTS)) {
    gchar *d = NULL;
    g_file_get_contents(gate, &d, NULL, NULL);
    g_free(d);
  }
}
