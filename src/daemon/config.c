/* cudafilterd's config file: GKeyFile syntax, one [daemon] section and a
 * [stream NAME] section per stream (config/cudafilterd.conf documents the
 * keys). Everything is checked here, kernels included, so that a reload
 * either gets a config that can run or keeps the old one. */
#include "cfd.h"
#include "../io/file_kind.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK(cfd - error - quark, cfd_error)

/* The keys a section may have, and the stream types that have them;
 * `kernel` marks those a running audio or file stream takes without a
 * restart. */
enum {
  T_AUDIO = 1 << CFD_AUDIO,
  T_PIPE = 1 << CFD_PIPELINE,
  T_FILE = 1 << CFD_FILE,
  T_ANY = T_AUDIO | T_PIPE | T_FILE
};

typedef struct key_info {
  const char *name;
  unsigned types; /* T_* */
  bool kernel;
} key_info;

static const key_info stream_keys[] = {
    {"type", T_ANY, false},
    {"input", T_AUDIO | T_FILE, false},
    {"output", T_AUDIO | T_FILE, false},
    {"rate", T_AUDIO, false},
    {"channels", T_AUDIO, false},
    {"block", T_AUDIO | T_FILE, false},
    {"pipeline-depth", T_AUDIO | T_FILE, false},
    {"threads", T_AUDIO | T_FILE, false},
    {"device-id", T_AUDIO | T_FILE, false},
    {"backend", T_AUDIO | T_FILE, false},
    {"algorithm", T_AUDIO | T_FILE, false},
    {"latency", T_AUDIO, false},
    {"duration", T_AUDIO, false},
    {"kernel-file", T_AUDIO | T_FILE, true},
    {"kernel", T_AUDIO | T_FILE, true},
    {"gain", T_AUDIO | T_FILE, true},
    {"crossfade", T_AUDIO | T_FILE, true},
    {"routing", T_AUDIO | T_FILE, true},
    {"realtime", T_FILE, false},
    {"stream", T_FILE, false},
    {"kernel2d", T_FILE, true},
    {"preset", T_FILE, true},
    {"size", T_FILE, true},
    {"sigma", T_FILE, true},
    {"border", T_FILE, false},
    {"cval", T_FILE, false},
    {"scale", T_FILE, false},
    {"bias", T_FILE, false},
    {"absolute", T_FILE, false},
    {"components", T_FILE, false},
    {"format", T_FILE, false},
    {"codec", T_FILE, false},
    {"overwrite", T_FILE, false},
    {"pipeline", T_PIPE, false},
    {"filter", T_PIPE, false},
    {"restart", T_AUDIO | T_PIPE, false},
    {"restart-delay", T_AUDIO | T_PIPE, false},
};

static const char *const type_names[] = {"audio", "pipeline", "file"};

static const key_info *find_key(const char *name)
{
  for (size_t i = 0; i < G_N_ELEMENTS(stream_keys); i++)
    if (!strcmp(stream_keys[i].name, name))
      return &stream_keys[i];
  return NULL;
}

void cfd_stream_conf_free(cfd_stream_conf *sc)
{
  if (!sc)
    return;
  g_free(sc->name);
  g_free(sc->shape);
  g_free(sc->stale_input);
  g_free(sc->input);
  g_free(sc->output);
  g_free(sc->kernel_file);
  g_free(sc->kernel_taps);
  cf_kernel_free(sc->kernel);
  g_free(sc->pipeline);
  g_free(sc->filter);
  g_free(sc->format);
  g_free(sc->codec);
  g_free(sc->kernel2d_file);
  g_free(sc->preset_name);
  cf_kernel2d_free(sc->kernel2d);
  g_free(sc);
}

void cfd_config_free(cfd_config *c)
{
  if (!c)
    return;
  g_free(c->path);
  g_free(c->socket);
  if (c->streams)
    g_ptr_array_free(c->streams, TRUE);
  g_free(c);
}

char *cfd_default_socket(void)
{
  const char *run = g_getenv("XDG_RUNTIME_DIR");
  if (run && *run && g_file_test(run, G_FILE_TEST_IS_DIR))
    return g_build_filename(run, "cudafilterd.sock", NULL);
  return cfd_fallback_socket();
}

char *cfd_fallback_socket(void)
{
  /* in a folder of this user's: a name in /tmp itself is anyone's to
   * take first (QA: another user listened there, cudafilterctl took its
   * answers and the daemon would not start) */
  return g_strdup_printf("/tmp/cudafilterd-%u/cudafilterd.sock",
                         (unsigned)getuid());
}

bool cfd_private_folder(const char *sock, bool make, GError **err)
{
  g_autofree char *fallback = cfd_fallback_socket();
  if (strcmp(sock, fallback))
    return true;
  g_autofree char *dir = g_path_get_dirname(sock);
  if (make && mkdir(dir, 0700) != 0 && errno != EEXIST) {
    g_set_error(err, CFD_ERROR, 0, "cannot make %s: %s", dir,
                g_strerror(errno));
    return false;
  }
  struct stat st;
  if (lstat(dir, &st) != 0 && !make && errno == ENOENT)
    return true; /* made at the daemon's start; no daemon there yet */
  if (lstat(dir, &st) != 0) {
    g_set_error(err, CFD_ERROR, 0, "%s: %s", dir, g_strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077)) {
    g_set_error(err, CFD_ERROR, 0,
                "%s is not a folder of this user's alone (%s, owner %u, "
                "mode %03o): another user may have made it; remove it, or "
                "give the socket with -s or socket =",
                dir, S_ISDIR(st.st_mode) ? "a folder" : "not a folder",
                (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
    return false;
  }
  return true;
}

bool cfd_taps_decimal_commas(const char *s, GError **err)
{
  /* a point or an exponent (1e-3) anywhere: commas separate */
  bool lone_comma = false, spaced = false, chain = false, lone_before = false,
       point = strpbrk(s, ".eE") != NULL, first_zero = false;
  unsigned n = 0;
  for (const char *p = s; *p;) {
    const char *sep = p;
    unsigned commas = 0;
    while (*p == ' ' || *p == '\t' || *p == ',')
      commas += *p++ == ',';
    if (!*p)
      break;
    bool lone = n && commas == 1 && p - sep == 1 &&
                g_ascii_isdigit(sep[-1]) && g_ascii_isdigit(*p);
    if (n && !lone && (commas == 0 || p - sep > 1))
      spaced = true;
    lone_comma |= lone;
    chain |= lone && lone_before; /* 1,2,1: a list */
    lone_before = lone;
    const char *start = p;
    while (*p && *p != ' ' && *p != '\t' && *p != ',')
      p++;
    if (n++ == 0) /* "0,5" reads as a decimal comma, "1,1" as two taps */
      first_zero = (p - start == 1 && *start == '0') ||
                   (p - start == 2 && start[1] == '0' &&
                    (*start == '-' || *start == '+'));
  }
  if (!lone_comma || point || chain || !(spaced || (n == 2 && first_zero)))
    return false;
  g_set_error(err, CFD_ERROR, 0,
              "a comma between digits and no decimal point: decimal "
              "commas? Write taps with a point (0.25), or a space after a "
              "comma between two taps (1, 0); commas and spaces both "
              "separate taps");
  return true;
}

bool cfd_parse_taps(const char *s, float **taps, size_t *len, GError **err)
{
  GArray *a = g_array_new(FALSE, FALSE, sizeof(float));
  const char *p = s;
  for (;;) {
    unsigned commas = 0;
    while (*p == ' ' || *p == '\t' || *p == ',')
      commas += *p++ == ',';
    if (!*p)
      break;
    /* an empty field ("0.5,,0.5") was read as nothing: two taps of
     * three (QA) */
    if (commas > 1 || (commas && a->len == 0)) {
      g_set_error(err, CFD_ERROR, 0, "tap %u is empty (a comma with no "
                  "number before it): write the missing number (0)",
                  a->len + 1);
      g_array_free(a, TRUE);
      return false;
    }
    char *end;
    errno = 0;
    double v = g_ascii_strtod(p, &end);
    /* decimal (strtod reads hex too: 0x10 was 16, where the other numbers
     * of a config refuse it), and finite as a float (FLT_MAX itself is) */
    bool hex = false;
    for (const char *c = p; c < end; c++)
      hex = hex || *c == 'x' || *c == 'X';
    if (end == p || errno == ERANGE || hex || !isfinite(v) ||
        fabs(v) > FLT_MAX) {
      g_set_error(err, CFD_ERROR, 0, "tap %u is not a finite decimal number: "
                  "'%.20s'",
                  a->len + 1, p);
      g_array_free(a, TRUE);
      return false;
    }
    float f = (float)v;
    g_array_append_val(a, f);
    p = end;
    if (*p && *p != ' ' && *p != '\t' && *p != ',') {
      g_set_error(err, CFD_ERROR, 0, "tap %u: unexpected '%c'", a->len, *p);
      g_array_free(a, TRUE);
      return false;
    }
  }
  if (a->len == 0) {
    g_set_error(err, CFD_ERROR, 0, "no taps");
    g_array_free(a, TRUE);
    return false;
  }
  if (cfd_taps_decimal_commas(s, err)) {
    g_array_free(a, TRUE);
    return false;
  }
  *len = a->len;
  *taps = (float *)g_array_free(a, FALSE);
  return true;
}

/* routing (-1: none asked) on a kernel as loaded: the CLI's --routing,
 * cf_kernel_as_matrix doing the reading */
static bool route(cf_kernel **kp, const char *what, int routing,
                  unsigned channels, GError **err)
{
  cf_routing have = cf_kernel_routing(*kp);
  if (routing < 0 || (cf_routing)routing == have)
    return true;
  if (routing == CF_ROUTING_MATRIX && have == CF_ROUTING_PER_CHANNEL) {
    cf_kernel *m = NULL;
    if (cf_kernel_as_matrix(*kp, channels, &m) != CF_OK) {
      const char *why = cf_last_error();
      if (g_str_has_prefix(why, "kernel as matrix: "))
        why += strlen("kernel as matrix: ");
      g_set_error(err, CFD_ERROR, 0, "routing = matrix: %s: %s", what, why);
      return false;
    }
    cf_kernel_free(*kp);
    *kp = m;
    return true;
  }
  unsigned n = cf_kernel_count(*kp);
  g_set_error(err, CFD_ERROR, 0, "routing = %s, but %s is %s (%u kernel%s)%s",
              cf_routing_name((cf_routing)routing), what, cf_routing_name(have),
              n, n == 1 ? "" : "s",
              routing == CF_ROUTING_MATRIX
                  ? "; matrix reads per-channel kernels (an audio file's "
                    "channels, a 2D .npy) or a 3D .npy"
                  : "");
  return false;
}

cf_kernel *cfd_kernel_build(const char *file, const float *taps, size_t len,
                            unsigned rate, double gain_db, int routing,
                            unsigned channels, GError **err)
{
  cf_kernel *k = NULL;
  cf_status s = file ? cf_kernel_load(file, rate, &k)
                     : cf_kernel_new_shared(taps, len, &k);
  if (s != CF_OK) {
    g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
    return NULL;
  }
  if (!route(&k, file ? file : "kernel (taps)", routing, channels, err)) {
    cf_kernel_free(k);
    return NULL;
  }
  if (gain_db != 0.0 &&
      cf_kernel_scale(k, (float)pow(10.0, gain_db / 20.0)) != CF_OK) {
    g_set_error(err, CFD_ERROR, 0, "gain %g dB: %s", gain_db, cf_last_error());
    cf_kernel_free(k);
    return NULL;
  }
  return k;
}

bool cfd_kernel_fits_input(const cf_kernel *k, unsigned channels, bool file,
                           GError **err)
{
  cf_routing rt = cf_kernel_routing(k);
  unsigned ins =
      rt == CF_ROUTING_MATRIX ? cf_kernel_inputs(k) : cf_kernel_count(k);
  if (rt == CF_ROUTING_SHARED || ins == channels)
    return true;
  /* A file stream has no channels key: its input's count is meant (QA:
   * "but channels = 2" named a key not written). A true-stereo IR's four
   * channels, or a stereo IR on mono, are a matrix routing = matrix
   * reads (QA, coming from afir: apply and cudafir read them so, the
   * daemon had no such key) */
  char *hint = rt == CF_ROUTING_PER_CHANNEL && ins % channels == 0
                   ? g_strdup_printf("; routing = matrix reads them as a "
                                     "%u x %u matrix (outputs x inputs: %u "
                                     "channel%s in, %u out)",
                                     ins / channels, channels, channels,
                                     channels == 1 ? "" : "s", ins / channels)
                   : NULL;
  g_set_error(
      err, CFD_ERROR, 0, "a %s kernel set for %u input channel%s, but %s %u%s",
      cf_routing_name(rt), ins, ins == 1 ? "" : "s",
      file ? "the input has" : "channels =", channels, hint ? hint : "");
  g_free(hint);
  return false;
}

/* ---- values ---- */

typedef struct reader {
  GKeyFile *kf;
  const char *path, *group;
  GError **err;
  const GPtrArray *known; /* cfd_known_input *, or NULL */
} reader;

static bool bad(reader *r, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static bool bad(reader *r, const char *key, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (key)
    g_set_error(r->err, CFD_ERROR, 0, "%s: [%s] %s: %s", r->path, r->group, key,
                msg);
  else
    g_set_error(r->err, CFD_ERROR, 0, "%s: [%s]: %s", r->path, r->group, msg);
  g_free(msg);
  return false;
}

/* The value as written (GKeyFile unescapes it), or NULL when absent. */
static char *get(reader *r, const char *key)
{
  return g_key_file_get_string(r->kf, r->group, key, NULL);
}

static bool get_uint(reader *r, const char *key, unsigned lo, unsigned hi,
                     unsigned def, unsigned *out)
{
  char *v = get(r, key);
  if (!v) {
    *out = def;
    return true;
  }
  char *end;
  errno = 0;
  unsigned long x = strtoul(g_strstrip(v), &end, 10);
  bool ok = *v && !*end && v[0] != '-' && errno == 0 && x >= lo && x <= hi;
  if (!ok)
    bad(r, key, "'%s' is not a whole number in %u..%u", v, lo, hi);
  else
    *out = (unsigned)x;
  g_free(v);
  return ok;
}

static bool get_double(reader *r, const char *key, double lo, double hi,
                       double def, double *out)
{
  char *v = get(r, key);
  if (!v) {
    *out = def;
    return true;
  }
  double x = 0;
  bool ok = cfd_parse_decimal(g_strstrip(v), lo, hi, &x);
  if (!ok)
    bad(r, key, "'%s' is not a number in %.15g..%.15g%s", v, lo, hi,
        cfd_comma_hint(v));
  else
    *out = x;
  g_free(v);
  return ok;
}

bool cfd_parse_decimal(const char *v, double lo, double hi, double *out)
{
  char *end;
  errno = 0;
  double x = g_ascii_strtod(v, &end);
  /* a decimal number (strtod also reads hex: 0x10 would be 16) */
  if (!*v || *end || strpbrk(v, "xX") || errno != 0 || !isfinite(x) ||
      !(x >= lo && x <= hi))
    return false;
  *out = x;
  return true;
}

static bool get_bool(reader *r, const char *key, bool def, bool *out)
{
  char *v = get(r, key);
  *out = def;
  if (!v)
    return true;
  g_strstrip(v);
  bool ok = true;
  if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
    *out = true;
  else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
    *out = false;
  else
    ok = bad(r, key, "'%s' is not true or false", v);
  g_free(v);
  return ok;
}

/* A name parsed (st) from value v of key: true, or false having said
 * which names there are. v is freed. */
static bool named(reader *r, const char *key, char *v, cf_status st,
                  const char *names)
{
  if (st != CF_OK)
    bad(r, key, "'%s' is not %s", v, names);
  g_free(v);
  return st == CF_OK;
}

/* A file's path relative to the config file's folder, made absolute; a
 * URL (proto://..., pipe:) as it is. Its ".." are left for the system to
 * follow, as `apply` and a shell leave them: after a linked folder
 * ("media/.." where media is a link) they lead elsewhere than the text
 * says (QA: the daemon opened another file than the CLI). */
static char *resolve(const char *dir, const char *path)
{
  /* file:NAME is the file NAME, as for apply (libav's own prefix: it
   * was a file named "file:NAME" in the config's folder; review), and
   * file:///NAME the path ///NAME: a file, checked as files are (taken
   * for a URL, an output naming the input passed and overwrote it, and
   * a FIFO hung the probe; QA) */
  if (g_str_has_prefix(path, "file:"))
    path += 5;
  else if (strstr(path, "://") || g_str_has_prefix(path, "pipe:"))
    return g_strdup(path);
  if (g_path_is_absolute(path))
    return g_strdup(path);
  char *cwd = g_get_current_dir();
  char *base = g_path_is_absolute(dir) ? g_strdup(dir)
                                       : g_build_filename(cwd, dir, NULL);
  char *p = g_build_filename(base, path, NULL);
  g_free(base);
  g_free(cwd);
  return p;
}

/* path (absolute, from resolve) with every link followed: the file's
 * own where it exists, else its folder's and its name; NULL where the
 * folder is not there either. */
static char *real_name(const char *path)
{
  char *r = realpath(path, NULL);
  if (r) {
    char *g = g_strdup(r);
    free(r);
    return g;
  }
  char *dir = g_path_get_dirname(path), *base = g_path_get_basename(path);
  char *rd = realpath(dir, NULL);
  char *g = rd ? g_build_filename(rd, base, NULL) : NULL;
  free(rd);
  g_free(dir);
  g_free(base);
  return g;
}

/* Whether two resolved paths name one file: the same file where both
 * exist (a symbolic or hard link, another name), else the same name once
 * links are followed (a folder reached through a link). URLs by their
 * text. Two streams wrote one file through a linked folder, each under
 * its own name: the output was neither's. */
static bool same_file(const char *a, const char *b)
{
  if (!strcmp(a, b))
    return true;
  if (strstr(a, "://") || strstr(b, "://") || g_str_has_prefix(a, "pipe:") ||
      g_str_has_prefix(b, "pipe:"))
    return false;
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  char *ra = real_name(a), *rb = real_name(b);
  bool same = ra && rb && !strcmp(ra, rb);
  g_free(ra);
  g_free(rb);
  return same;
}

/* A file stream's input the probe could not read (why), taken as a
 * reload's known input of the same section if there is one. */
static bool take_known(reader *r, cfd_stream_conf *sc, const GError *why)
{
  for (guint i = 0; r->known && i < r->known->len; i++) {
    const cfd_known_input *k = r->known->pdata[i];
    if (strcmp(k->name, sc->name) || strcmp(k->keys, sc->shape) ||
        k->video != sc->video)
      continue;
    sc->rate = k->rate;
    sc->channels = k->channels;
    sc->width = k->width;
    sc->height = k->height;
    sc->pixfmt = k->pixfmt;
    sc->seconds = k->seconds;
    sc->stale_input = g_strdup(why->message);
    return true;
  }
  return false;
}

cfd_known_input *cfd_known_input_of(const cfd_stream_conf *sc)
{
  if (sc->type != CFD_FILE)
    return NULL;
  cfd_known_input *k = g_new0(cfd_known_input, 1);
  k->name = g_strdup(sc->name);
  k->keys = g_strndup(sc->shape, sc->shape_keys);
  k->video = sc->video;
  k->rate = sc->rate;
  k->channels = sc->channels;
  k->width = sc->width;
  k->height = sc->height;
  k->pixfmt = sc->pixfmt;
  k->seconds = sc->seconds;
  return k;
}

void cfd_known_input_free(cfd_known_input *k)
{
  if (!k)
    return;
  g_free(k->name);
  g_free(k->keys);
  g_free(k);
}

/* type=file: the input (probed: its rate and channels are the stream's),
 * the output, and how it is written. */
static bool read_file(reader *r, const char *dir, cfd_stream_conf *sc)
{
  char *in = get(r, "input"), *out = get(r, "output");
  if (!in || !*g_strstrip(in) || !out || !*g_strstrip(out)) {
    bool no_in = !in || !*in;
    g_free(in);
    g_free(out);
    return bad(r, no_in ? "input" : "output",
               "missing: a file (or a URL libav %s)",
               no_in ? "reads" : "writes");
  }
  sc->input = resolve(dir, in);
  sc->output = resolve(dir, out);
  g_free(in);
  g_free(out);
  if (same_file(sc->input, sc->output))
    return bad(r, "output", "is the input%s; write to another file",
               strcmp(sc->input, sc->output) ? " (another name of it)" : "");
  if (!strstr(sc->output, "://")) { /* a file (not a URL): its folder */
    char *folder = g_path_get_dirname(sc->output);
    bool there = g_file_test(folder, G_FILE_TEST_IS_DIR);
    if (!there)
      bad(r, "output", "its folder %s does not exist", folder);
    g_free(folder);
    if (!there)
      return false;
  }
  if (!get_bool(r, "realtime", false, &sc->realtime) ||
      !get_bool(r, "overwrite", true, &sc->overwrite))
    return false;
  sc->format = get(r, "format");
  sc->codec = get(r, "codec");
  if ((sc->format && !*g_strstrip(sc->format)) ||
      (sc->codec && !*g_strstrip(sc->codec)))
    return bad(r, sc->codec && !*sc->codec ? "codec" : "format",
               "empty: a libav name");
  GError *oe = NULL;
  if (!cfd_file_check_output(sc, &oe)) { /* names its key */
    g_set_error(r->err, CFD_ERROR, 0, "%s: [%s] %s", r->path, r->group,
                oe->message);
    g_error_free(oe);
    return false;
  }
  if (sc->video) { /* its size, and that it has a picture */
    GError *e = NULL;
    if (!cfd_file_vprobe(sc->input, &sc->width, &sc->height, &sc->pixfmt,
                         &sc->seconds, &e) &&
        !take_known(r, sc, e)) {
      bad(r, "input", "%s", e->message);
      g_error_free(e);
      return false;
    }
    g_clear_error(&e);
    return true;
  }
  /* stream = N: the input's audio stream to filter (default: the main) */
  unsigned stream = 0;
  char *sv = get(r, "stream");
  bool have_stream = sv != NULL;
  g_free(sv);
  if (have_stream && !get_uint(r, "stream", 0, 1023, 0, &stream))
    return false;
  sc->stream = have_stream ? (int)stream : -1;
  GError *e = NULL;
  if (!cfd_file_probe(sc->input, sc->stream, &sc->rate, &sc->channels,
                      &sc->seconds, &e) &&
      !take_known(r, sc, e)) {
    bad(r, "input", "%s", e->message);
    g_error_free(e);
    return false;
  }
  g_clear_error(&e);
  return true;
}

/* threads, device-id, backend: where an engine runs (audio and video). */
static bool read_engine(reader *r, cfd_stream_conf *sc)
{
  unsigned dev = 0;
  char *v;
  if (!get_uint(r, "threads", 0, 1024, 0, &sc->threads) ||
      !get_uint(r, "device-id", 0, 1023, 0, &dev))
    return false;
  sc->device_id = (int)dev;
  sc->backend = CF_BACKEND_AUTO;
  return !(v = get(r, "backend")) ||
         named(r, "backend", v,
               cf_backend_from_string(g_strstrip(v), &sc->backend),
               "auto, cpu or cuda");
}

static bool read_audio(reader *r, const char *dir, cfd_stream_conf *sc)
{
  char *v;
  static const char *const video_only[] = {"size",     "sigma",     "border",
                                           "cval",     "scale",     "bias",
                                           "absolute", "components"};
  for (size_t i = 0; i < G_N_ELEMENTS(video_only); i++)
    if (g_key_file_has_key(r->kf, r->group, video_only[i], NULL))
      return bad(r, video_only[i], "applies to video files (kernel2d, preset)");
  bool is_file = sc->type == CFD_FILE;
  if (is_file) {
    if (!read_file(r, dir, sc))
      return false;
  } else {
    sc->input = get(r, "input");
    sc->output = get(r, "output");
    if (!sc->input)
      sc->input = g_strdup("default");
    if (!sc->output)
      sc->output = g_strdup("default");
  }
  /* a file's latency is taken out of it: the FFT may use larger blocks */
  if ((!is_file &&
       (!get_uint(r, "rate", 1000, 768000, 48000, &sc->rate) ||
        !get_uint(r, "channels", 1, CF_MAX_CHANNELS, 2, &sc->channels))) ||
      !get_uint(r, "block", 1, is_file ? CF_AUDIO_MAX_BLOCK : 16384,
                is_file ? 4096 : 256, &sc->block) ||
      !get_uint(r, "pipeline-depth", 0, CF_AUDIO_MAX_DEPTH, 0,
                &sc->pipeline_depth) ||
      !read_engine(r, sc) || !get_double(r, "latency", 0, 2, 0, &sc->latency) ||
      !get_double(r, "duration", 0, 1e7, 0, &sc->duration) ||
      !get_double(r, "gain", -CF_GAIN_DB_MAX, CF_GAIN_DB_MAX, 0, &sc->gain_db) ||
      !get_double(r, "crossfade", 0, 60, 0.05, &sc->crossfade))
    return false;
  sc->algorithm = CF_ALGO_AUTO;
  if ((v = get(r, "algorithm")) &&
      !named(r, "algorithm", v,
             cf_algorithm_from_string(g_strstrip(v), &sc->algorithm),
             "auto, direct, fft-uniform or fft-nonuniform"))
    return false;
  cf_routing routing;
  sc->routing = -1; /* the kernel file's own */
  if ((v = get(r, "routing"))) {
    if (!named(r, "routing", v, cf_routing_from_string(g_strstrip(v), &routing),
               "shared, per-channel or matrix"))
      return false;
    sc->routing = (int)routing;
  }
  char *file = get(r, "kernel-file");
  char *taps = get(r, "kernel");
  if (!file == !taps) {
    g_free(file);
    g_free(taps);
    return bad(r, NULL,
               "needs one of kernel-file (a file) or kernel "
               "(taps), not %s%s",
               file ? "both" : "neither",
               is_file && !file ? " (or, for video, kernel2d or preset)" : "");
  }
  GError *e = NULL;
  if (taps) {
    bool ok = cfd_parse_taps(taps, &sc->kernel_taps, &sc->kernel_len, &e);
    g_free(taps);
    if (!ok) {
      bad(r, "kernel", "%s", e->message);
      g_error_free(e);
      return false;
    }
  } else {
    /* relative to the config file's folder */
    if (!*g_strstrip(file)) {
      g_free(file);
      return bad(r, "kernel-file", "empty: a file");
    }
    sc->kernel_file = resolve(dir, file);
    g_free(file);
  }
  sc->kernel =
      cfd_kernel_build(sc->kernel_file, sc->kernel_taps, sc->kernel_len,
                       sc->rate, sc->gain_db, sc->routing, sc->channels, &e);
  if (!sc->kernel ||
      !cfd_kernel_fits_input(sc->kernel, sc->channels, is_file, &e)) {
    bad(r, sc->kernel_file ? "kernel-file" : "kernel", "%s", e->message);
    g_error_free(e);
    return false;
  }
  return true;
}

cf_kernel2d *cfd_kernel2d_build(const char *file, const char *preset,
                                unsigned size, double sigma, GError **err)
{
  cf_kernel2d *k = NULL;
  cf_preset p;
  cf_status s;
  if (file)
    s = cf_kernel2d_load(file, &k);
  else if ((s = cf_preset_from_string(preset, &p)) != CF_OK)
    g_set_error(err, CFD_ERROR, 0,
                "'%s' is not gaussian, box, sharpen, unsharp, sobel-x, "
                "sobel-y, laplacian or emboss",
                preset);
  else
    s = cf_kernel2d_preset(p, size, sigma, &k);
  if (s != CF_OK && !(err && *err))
    g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
  return s == CF_OK ? k : NULL;
}

/* type = file with kernel2d or preset: a video file. */
static bool read_video(reader *r, const char *dir, cfd_stream_conf *sc)
{
  static const char *const audio_only[] = {
      "kernel-file", "kernel", "gain",   "crossfade",
      "routing",     "block",  "stream", "pipeline-depth"};
  for (size_t i = 0; i < G_N_ELEMENTS(audio_only); i++)
    if (g_key_file_has_key(r->kf, r->group, audio_only[i], NULL))
      return bad(r, audio_only[i],
                 "applies to audio files (kernel-file, kernel); this "
                 "stream filters video (kernel2d, preset)");
  char *file = get(r, "kernel2d");
  sc->preset_name = get(r, "preset");
  if (file && sc->preset_name) {
    g_free(file);
    return bad(r, NULL, "needs one of kernel2d (a file) or preset, not both");
  }
  if (file && (g_key_file_has_key(r->kf, r->group, "size", NULL) ||
               g_key_file_has_key(r->kf, r->group, "sigma", NULL))) {
    g_free(file);
    return bad(
        r, g_key_file_has_key(r->kf, r->group, "size", NULL) ? "size" : "sigma",
        "applies to a preset; this stream has kernel2d (a file)");
  }
  if (sc->preset_name)
    g_strstrip(sc->preset_name);
  if (file) {
    sc->kernel2d_file = resolve(dir, g_strstrip(file));
    g_free(file);
  }
  /* 0: the preset's default; the side the element and `apply` take */
  if (!get_uint(r, "size", 0, CF_KERNEL2D_MAX_SIDE, 0, &sc->size) ||
      !get_double(r, "sigma", 0, 1e6, 0, &sc->sigma) || !read_engine(r, sc))
    return false;
  char *v;
  sc->algo2d = CF_ALGO2D_AUTO;
  if ((v = get(r, "algorithm")) &&
      !named(r, "algorithm", v,
             cf_algorithm2d_from_string(g_strstrip(v), &sc->algo2d),
             "auto, direct, separable or fft"))
    return false;
  sc->border = CF_BORDER_REFLECT;
  if ((v = get(r, "border")) &&
      !named(r, "border", v, cf_border_from_string(g_strstrip(v), &sc->border),
             "reflect, mirror, nearest, wrap or constant"))
    return false;
  double cval, scale, bias;
  if (!get_double(r, "cval", -FLT_MAX, FLT_MAX, 0, &cval) ||
      !get_double(r, "scale", -FLT_MAX, FLT_MAX, 1, &scale) ||
      !get_double(r, "bias", -FLT_MAX, FLT_MAX, 0, &bias) ||
      !get_bool(r, "absolute", false, &sc->absolute))
    return false;
  sc->cval = (float)cval;
  sc->scale = (float)scale;
  sc->bias = (float)bias;
  GError *e = NULL;
  sc->kernel2d = cfd_kernel2d_build(sc->kernel2d_file, sc->preset_name,
                                    sc->size, sc->sigma, &e);
  if (!sc->kernel2d) {
    bad(r, sc->kernel2d_file ? "kernel2d" : "preset", "%s", e->message);
    g_error_free(e);
    return false;
  }
  if (!read_file(r, dir, sc))
    return false;
  /* components name what the input's format has (known once probed) */
  sc->components = CF_COMP_ALL;
  if ((v = get(r, "components"))) {
    cf_status st =
        cf_components_from_string(g_strstrip(v), sc->pixfmt, &sc->components);
    g_free(v);
    const char *why = cf_last_error();
    if (g_str_has_prefix(why, "components: "))
      why += strlen("components: ");
    if (st != CF_OK)
      return bad(r, "components", "%s (the input is filtered as %s)", why,
                 cf_pixel_format_name(sc->pixfmt));
  }
  if (sc->algo2d == CF_ALGO2D_SEPARABLE) {
    /* a kernel that is not rank 1: the engine, made as at the start (on
     * the CPU: the refusal is the same everywhere), says so */
    cf_video_config vc;
    cf_video_config_init(&vc);
    vc.width = sc->width;
    vc.height = sc->height;
    vc.format = sc->pixfmt;
    vc.algorithm = CF_ALGO2D_SEPARABLE;
    vc.backend = CF_BACKEND_CPU;
    vc.threads = 1;
    cf_engine *probe = NULL;
    if (cf_engine_new_video(&vc, sc->kernel2d, &probe) != CF_OK)
      return bad(r, "algorithm", "%s", cf_last_error());
    cf_engine_free(probe);
  }
  return true;
}

static bool read_pipeline(reader *r, cfd_stream_conf *sc)
{
  sc->pipeline = get(r, "pipeline");
  sc->filter = get(r, "filter");
  if (!sc->pipeline || !*g_strstrip(sc->pipeline))
    return bad(r, "pipeline", "missing: a gst-launch-1.0 description");
  if (sc->filter && !*g_strstrip(sc->filter))
    return bad(r, "filter", "empty: the name of an element");
  /* built (not started) here: a missing element or a bad property is the
   * config's error, not the stream's at its start */
  GError *e = NULL;
  if (!cfd_pipeline_check(sc, &e)) {
    bad(r, g_str_has_prefix(e->message, "filter") ? NULL : "pipeline", "%s",
        e->message);
    g_error_free(e);
    return false;
  }
  return true;
}

/* restart = no | on-failure | always, restart-delay = seconds */
static bool read_restart(reader *r, cfd_stream_conf *sc)
{
  char *v = get(r, "restart");
  bool ok = true;
  sc->restart = CFD_RESTART_NO;
  if (v) {
    g_strstrip(v);
    if (!strcmp(v, "on-failure"))
      sc->restart = CFD_RESTART_ON_FAILURE;
    else if (!strcmp(v, "always"))
      sc->restart = CFD_RESTART_ALWAYS;
    else if (strcmp(v, "no"))
      ok = bad(r, "restart", "'%s' is not no, on-failure or always", v);
    g_free(v);
  }
  return ok &&
         get_double(r, "restart-delay", 0.05, 3600, 1, &sc->restart_delay);
}

/* Every value of the section is text (GKeyFile hands out a value that is
 * not UTF-8 as if it were absent). */
static bool all_text(reader *r)
{
  gsize n = 0;
  char **keys = g_key_file_get_keys(r->kf, r->group, &n, NULL);
  bool ok = true;
  for (gsize i = 0; ok && i < n; i++) {
    char *v = g_key_file_get_string(r->kf, r->group, keys[i], NULL);
    if (!v)
      ok = bad(r, keys[i], "not UTF-8 text (a path in another encoding?)");
    g_free(v);
  }
  g_strfreev(keys);
  return ok;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static cfd_stream_conf *read_stream(reader *r, const char *dir)
{
  cfd_stream_conf *sc = g_new0(cfd_stream_conf, 1);
  sc->routing = -1;
  sc->name = g_strdup(r->group + strlen("stream "));
  g_strstrip(sc->name);
  bool ok = true;
  if (!*sc->name || strpbrk(sc->name, " \t")) {
    ok = bad(r, NULL, "a stream's name is one word: [stream NAME]");
    goto out;
  }
  /* status --json carried its bytes as they were: invalid JSON (QA) */
  if (!g_utf8_validate(sc->name, -1, NULL)) {
    ok = bad(r, NULL, "a stream's name is UTF-8 text");
    goto out;
  }
  if (!all_text(r)) {
    ok = false;
    goto out;
  }
  char *type = get(r, "type");
  if (!type) {
    ok = bad(r, "type", "missing: audio, pipeline or file");
    goto out;
  }
  g_strstrip(type);
  if (!strcmp(type, "audio"))
    sc->type = CFD_AUDIO;
  else if (!strcmp(type, "pipeline"))
    sc->type = CFD_PIPELINE;
  else if (!strcmp(type, "file"))
    sc->type = CFD_FILE;
  else
    ok = bad(r, "type", "'%s' is not audio, pipeline or file", type);
  g_free(type);
  if (!ok)
    goto out;

  gsize n = 0;
  char **keys = g_key_file_get_keys(r->kf, r->group, &n, NULL);
  GString *shape = g_string_new(NULL);
  qsort(keys, n, sizeof *keys, cmp_str);
  for (gsize i = 0; ok && i < n; i++) {
    const key_info *ki = find_key(keys[i]);
    if (!ki)
      ok = bad(r, keys[i], "unknown key");
    else if (!(ki->types & (1u << sc->type))) {
      GString *t = g_string_new(NULL);
      for (unsigned j = 0; j < G_N_ELEMENTS(type_names); j++)
        if (ki->types & (1u << j))
          g_string_append_printf(t, "%stype=%s", t->len ? " and " : "",
                                 type_names[j]);
      ok = bad(r, keys[i], "only %s streams have it", t->str);
      g_string_free(t, TRUE);
    } else if (!ki->kernel) {
      /* as read (spaces around a value change nothing) */
      char *v = get(r, keys[i]);
      g_string_append_printf(shape, "%s=%s\n", keys[i], v ? g_strstrip(v) : "");
      g_free(v);
    }
  }
  g_strfreev(keys);
  sc->shape = g_string_free(shape, FALSE);
  if (ok && sc->type != CFD_FILE)
    ok = read_restart(r, sc);
  if (ok && sc->type != CFD_FILE) /* a file's input is probed here */
    ok = sc->type == CFD_PIPELINE ? read_pipeline(r, sc)
                                  : read_audio(r, dir, sc);
  if (ok) {
    const char *why = NULL;
    bool have = sc->type == CFD_AUDIO  ? cfd_audio_available(&why)
                : sc->type == CFD_FILE ? cfd_file_available(&why)
                                       : cfd_pipeline_available(&why);
    if (!have)
      ok = bad(r, "type", "%s", why);
  }
  if (ok && sc->type == CFD_FILE) {
    sc->video = g_key_file_has_key(r->kf, r->group, "kernel2d", NULL) ||
                g_key_file_has_key(r->kf, r->group, "preset", NULL);
    ok = sc->video ? read_video(r, dir, sc) : read_audio(r, dir, sc);
  }
  if (ok && sc->type == CFD_FILE) {
    /* an input that changed under the same name is a new stream */
    char *s2 = g_strdup_printf("%s(input: %u Hz, %u channels, %ux%u %s, "
                               "%.6f s)\n",
                               sc->shape, sc->rate, sc->channels, sc->width,
                               sc->height,
                               sc->video ? cf_pixel_format_name(sc->pixfmt)
                                         : "-",
                               sc->seconds);
    sc->shape_keys = strlen(sc->shape);
    g_free(sc->shape);
    sc->shape = s2;
  }
out:
  if (!ok) {
    cfd_stream_conf_free(sc);
    return NULL;
  }
  return sc;
}

static bool prefix_loads(const char *text, gsize len)
{
  GKeyFile *kf = g_key_file_new();
  gboolean ok = g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, NULL);
  g_key_file_free(kf);
  return ok;
}

/* The line GKeyFile refused (its message quotes the line but does not
 * number it): the first whose prefix of the file no longer loads (once a
 * prefix does not, no longer one does: found by halving). 0 when the
 * whole file loads. */
static size_t first_bad_line(const char *text, gsize len)
{
  GArray *ends = g_array_new(FALSE, FALSE, sizeof(gsize)); /* line i's end */
  for (gsize at = 0; at < len; at++)
    if (text[at] == '\n' || at + 1 == len) {
      gsize end = at + 1;
      g_array_append_val(ends, end);
    }
  /* the first k lines load for k = lo, not for k = hi */
  size_t lo = 0, hi = ends->len;
  if (hi == 0 || prefix_loads(text, g_array_index(ends, gsize, hi - 1)))
    hi = 0;
  while (hi && lo + 1 < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (prefix_loads(text, g_array_index(ends, gsize, mid - 1)))
      lo = mid;
    else
      hi = mid;
  }
  g_array_free(ends, TRUE);
  return hi;
}

/* The largest config file read (an inline kernel of a million taps
 * fits). */
#define CFD_CONFIG_MAX (16u << 20)

/* The config's bytes (NUL-terminated, as g_file_get_contents gives
 * them): a regular file of at most CFD_CONFIG_MAX bytes. QA: a FIFO as
 * the config (or a reload's) waited for ever for a writer, /dev/zero or
 * /dev/urandom took memory until the machine had none, a 3 GB file was
 * read whole (3 GB, 14 s) to say "a NUL byte". */
static bool read_config(const char *path, char **text, gsize *len,
                        GError **err)
{
  /* O_NONBLOCK: the open of a FIFO with no writer returns at once */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    g_set_error(err, CFD_ERROR, 0, "%s: cannot open: %s", path,
                g_strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    g_set_error(err, CFD_ERROR, 0, "%s: %s", path, g_strerror(errno));
    close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    g_set_error(err, CFD_ERROR, 0, "%s: not a config file but %s", path,
                cf_file_kind(st.st_mode));
    close(fd);
    return false;
  }
  GString *b = g_string_sized_new(st.st_size > 0 && st.st_size <= CFD_CONFIG_MAX
                                      ? (gsize)st.st_size + 1
                                      : 4096);
  char buf[65536];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      g_set_error(err, CFD_ERROR, 0, "%s: read error: %s", path,
                  g_strerror(errno));
      break;
    }
    if (r == 0) {
      close(fd);
      *len = b->len;
      *text = g_string_free(b, FALSE);
      return true;
    }
    /* (a file that grows while read stops here too) */
    if (b->len + (gsize)r > CFD_CONFIG_MAX) {
      g_set_error(err, CFD_ERROR, 0,
                  "%s: larger than a config may be (%u MiB; a kernel that "
                  "long: kernel-file)",
                  path, CFD_CONFIG_MAX >> 20);
      break;
    }
    g_string_append_len(b, buf, r);
  }
  close(fd);
  g_string_free(b, TRUE);
  return false;
}

cfd_config *cfd_config_load(const char *path, const GPtrArray *known,
                            GError **err)
{
  char *text = NULL;
  gsize len = 0;
  if (!read_config(path, &text, &len, err))
    return NULL;
  GKeyFile *kf = g_key_file_new();
  GError *e = NULL;
  bool read = true;
  /* a UTF-8 byte order mark (some editors write one) is skipped, as in
   * kernel text files: GKeyFile refused the first line, the mark
   * invisible in its message */
  if (read && len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
    memmove(text, text + 3, len - 3 + 1);
    len -= 3;
  }
  /* a NUL byte: GKeyFile reads past it, the checks below (split into
   * lines as a C string) stopped there, and a key given twice after it
   * passed (QA) */
  const char *nul = read ? memchr(text, '\0', len) : NULL;
  if (nul) {
    size_t line = 1;
    for (const char *c = text; c < nul; c++)
      line += *c == '\n';
    g_set_error(err, CFD_ERROR, 0, "%s:%zu: a NUL byte (not a text file?)",
                path, line);
    g_key_file_free(kf);
    g_free(text);
    return NULL;
  }
  if (!read ||
      !g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, &e)) {
    size_t line = text ? first_bad_line(text, len) : 0;
    if (line)
      g_set_error(err, CFD_ERROR, 0, "%s:%zu: %s", path, line, e->message);
    else
      g_set_error(err, CFD_ERROR, 0, "%s: %s", path, e->message);
    g_error_free(e);
    g_key_file_free(kf);
    g_free(text);
    return NULL;
  }
  /* GKeyFile merges a section given twice and keeps the last of a key
   * given twice: a copied section or line would silently override the
   * first */
  GHashTable *seen =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GHashTable *given = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                            NULL); /* key -> its line */
  char **lines = g_strsplit(text, "\n", -1);
  g_free(text);
  bool dup = false;
  const char *section = "";
  for (guint i = 0; lines[i] && !dup; i++) {
    char *l = g_strstrip(lines[i]);
    if (*l == '[') {
      section = l;
      g_hash_table_remove_all(given);
      if (!g_hash_table_add(seen, g_strdup(l))) {
        g_set_error(err, CFD_ERROR, 0, "%s:%u: a second %s section", path,
                    i + 1, l);
        dup = true;
      }
      continue;
    }
    char *eq = strchr(l, '=');
    if (*l == '#' || !eq)
      continue;
    char *key = g_strstrip(g_strndup(l, (gsize)(eq - l)));
    if (strchr(key, '[')) {
      /* GKeyFile keeps KEY[LANG] apart from KEY, out of our sight */
      g_set_error(err, CFD_ERROR, 0,
                  "%s:%u: %s %s: a key for one language means nothing "
                  "here; write %.*s",
                  path, i + 1, section, key, (int)strcspn(key, "["), key);
      dup = true;
      g_free(key);
      continue;
    }
    if (!g_utf8_validate(eq + 1, -1, NULL)) {
      /* GKeyFile would hand it out as absent (all_text says so too, but
       * without the line) */
      g_set_error(err, CFD_ERROR, 0,
                  "%s:%u: %s %s: not UTF-8 text (a path in another "
                  "encoding?)",
                  path, i + 1, section, key);
      dup = true;
      g_free(key);
      continue;
    }
    guint first = GPOINTER_TO_UINT(g_hash_table_lookup(given, key));
    if (first) {
      g_set_error(err, CFD_ERROR, 0,
                  "%s:%u: %s %s: given a second time (first on line %u)", path,
                  i + 1, section, key, first);
      dup = true;
      g_free(key);
    } else
      g_hash_table_insert(given, key, GUINT_TO_POINTER(i + 1));
  }
  g_strfreev(lines);
  g_hash_table_destroy(seen);
  g_hash_table_destroy(given);
  if (dup) {
    g_key_file_free(kf);
    return NULL;
  }
  cfd_config *c = g_new0(cfd_config, 1);
  c->path = g_strdup(path);
  c->streams =
      g_ptr_array_new_with_free_func((GDestroyNotify)cfd_stream_conf_free);
  char *dir = g_path_get_dirname(path);
  gsize n = 0;
  char **groups = g_key_file_get_groups(kf, &n);
  bool ok = true;
  for (gsize i = 0; ok && i < n; i++) {
    reader r = {kf, path, groups[i], err, known};
    if (!strcmp(groups[i], "daemon")) {
      gsize nk = 0;
      if (!(ok = all_text(&r)))
        break;
      char **keys = g_key_file_get_keys(kf, groups[i], &nk, NULL);
      for (gsize j = 0; ok && j < nk; j++)
        if (strcmp(keys[j], "socket"))
          ok = bad(&r, keys[j],
                   "unknown key (the [daemon] section has "
                   "only socket)");
      g_strfreev(keys);
      c->socket = get(&r, "socket");
      if (ok && c->socket && !*g_strstrip(c->socket))
        ok = bad(&r, "socket", "empty: a path");
      if (ok && c->socket) { /* relative to the config file's folder */
        char *abs = resolve(dir, c->socket);
        g_free(c->socket);
        c->socket = abs;
      }
    } else if (g_str_has_prefix(groups[i], "stream ")) {
      cfd_stream_conf *sc = read_stream(&r, dir);
      ok = sc != NULL;
      for (guint j = 0; ok && j < c->streams->len; j++)
        if (!strcmp(((cfd_stream_conf *)c->streams->pdata[j])->name, sc->name))
          ok = bad(&r, NULL, "a second stream named '%s'", sc->name);
      if (sc && !ok)
        cfd_stream_conf_free(sc);
      else if (sc)
        g_ptr_array_add(c->streams, sc);
    } else {
      ok = bad(&r, NULL,
               "unknown section (there are [daemon] and "
               "[stream NAME])");
    }
  }
  /* two streams writing one file write over each other, and one reading
   * what another writes reads half a file */
  for (guint i = 0; ok && i < c->streams->len; i++) {
    const cfd_stream_conf *a = c->streams->pdata[i];
    for (guint j = 0; ok && a->type == CFD_FILE && j < c->streams->len; j++) {
      const cfd_stream_conf *b = c->streams->pdata[j];
      if (j == i || b->type != CFD_FILE)
        continue;
      if (j < i && same_file(a->output, b->output)) {
        g_set_error(err, CFD_ERROR, 0,
                    "%s: [stream %s] output: also the output of "
                    "[stream %s] (%s)",
                    path, a->name, b->name, a->output);
        ok = false;
      } else if (same_file(a->output, b->input)) {
        g_set_error(err, CFD_ERROR, 0,
                    "%s: [stream %s] output: the input of [stream %s] (%s)",
                    path, a->name, b->name, a->output);
        ok = false;
      }
    }
  }
  if (ok && c->streams->len == 0) {
    g_set_error(err, CFD_ERROR, 0, "%s: no [stream NAME] section", path);
    ok = false;
  }
  g_strfreev(groups);
  g_free(dir);
  g_key_file_free(kf);
  if (!ok) {
    cfd_config_free(c);
    return NULL;
  }
  return c;
}

static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

void cfd_percentiles(const float *v, size_t n, double *mean, double *p50,
                     double *p99, double *max)
{
  *mean = *p50 = *p99 = *max = 0;
  if (n == 0)
    return;
  for (size_t i = 0; i < n; i++)
    *mean += v[i];
  *mean /= (double)n;
  float *s = g_memdup2(v, n * sizeof *v);
  qsort(s, n, sizeof *s, cmp_float);
  *p50 = s[(n - 1) / 2];
  *p99 = s[(size_t)ceil(0.99 * (double)n) - 1];
  *max = s[n - 1];
  g_free(s);
}

char *cfd_quoted(const char *s)
{
  if (*s && !strpbrk(s, " \t\"\\\n"))
    return g_strdup(s);
  GString *q = g_string_new("\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      g_string_append_c(q, '\\');
    g_string_append_c(q, *s == '\n' || *s == '\t' ? ' ' : *s);
  }
  g_string_append_c(q, '"');
  return g_string_free(q, FALSE);
}

static void json_string(GString *out, const char *s, size_t n)
{
  g_string_append_c(out, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      g_string_append_printf(out, "\\%c", c);
    else if (c < 0x20)
      g_string_append_printf(out, "\\u%04x", c);
    else
      g_string_append_c(out, (char)c);
  }
  g_string_append_c(out, '"');
}

/* JSON's number grammar, the whole of s[0..n). */
static bool json_number(const char *s, size_t n)
{
  size_t i = 0;
  if (i < n && s[i] == '-')
    i++;
  size_t d = i;
  while (i < n && g_ascii_isdigit(s[i]))
    i++;
  if (i == d || (s[d] == '0' && i - d > 1))
    return false;
  if (i < n && s[i] == '.') {
    size_t f = ++i;
    while (i < n && g_ascii_isdigit(s[i]))
      i++;
    if (i == f)
      return false;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-'))
      i++;
    size_t e = i;
    while (i < n && g_ascii_isdigit(s[i]))
      i++;
    if (i == e)
      return false;
  }
  return i == n;
}

char *cfd_status_json(const char *lines)
{
  GString *out = g_string_new("{\"streams\":[");
  bool first_stream = true;
  for (const char *p = lines; *p;) {
    const char *end = strchr(p, '\n');
    if (!end)
      end = p + strlen(p);
    size_t nl = strcspn(p, " \n");
    if (nl) {
      g_string_append(out, first_stream ? "{\"name\":" : ",{\"name\":");
      first_stream = false;
      json_string(out, p, nl);
      const char *q = p + nl;
      while (q < end) {
        while (q < end && *q == ' ')
          q++;
        const char *eq = memchr(q, '=', (size_t)(end - q));
        if (q >= end || !eq)
          break;
        g_string_append_c(out, ',');
        json_string(out, q, (size_t)(eq - q));
        g_string_append_c(out, ':');
        const char *v = eq + 1;
        if (*v == '"') { /* quoted: up to the closing quote */
          GString *u = g_string_new(NULL);
          for (v++; v < end && *v != '"'; v++) {
            if (*v == '\\' && v + 1 < end)
              v++;
            g_string_append_c(u, *v);
          }
          json_string(out, u->str, u->len);
          g_string_free(u, TRUE);
          q = v < end ? v + 1 : v;
          continue;
        }
        size_t vn = strcspn(v, " \n");
        if (json_number(v, vn) || (vn == 4 && !strncmp(v, "true", 4)) ||
            (vn == 5 && !strncmp(v, "false", 5)))
          g_string_append_len(out, v, (gssize)vn);
        else
          json_string(out, v, vn);
        q = v + vn;
      }
      g_string_append_c(out, '}');
    }
    p = *end ? end + 1 : end;
  }
  g_string_append(out, "]}");
  return g_string_free(out, FALSE);
}
