/* cudafilterctl: one command to a running cudafilterd.
 *
 *   cudafilterctl [-s SOCKET] status [--json] [STREAM]
 *   cudafilterctl [-s SOCKET] set STREAM KEY VALUE
 *   cudafilterctl [-s SOCKET] swap-kernel STREAM FILE [CROSSFADE_SECONDS]
 *   cudafilterctl [-s SOCKET] restart STREAM
 *   cudafilterctl [-s SOCKET] reload
 *
 * Prints the daemon's answer; exits 1 when it ends in "error:", 2 on a
 * usage error, 3 when no daemon answers. An argument with a space or a
 * quote goes to the daemon in double quotes, as one word. */
#include "cfd.h"

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
  fprintf(f, "usage: cudafilterctl [-s SOCKET] COMMAND [ARGS]\n"
             "  status [--json] [STREAM]  (--json: one line of JSON)\n"
             "  set STREAM KEY VALUE      (audio, file: kernel-file, kernel, "
             "gain, crossfade,\n"
             "                             routing;\n"
             "                             video file: kernel2d, preset, "
             "size, sigma;\n"
             "                             pipeline: [ELEMENT.]PROPERTY)\n"
             "  swap-kernel STREAM FILE [CROSSFADE_SECONDS]  (video: no "
             "crossfade)\n"
             "  restart STREAM            (stop it, start it from its "
             "section)\n"
             "  reload\n"
             "  -s, --socket SOCKET       the daemon's control socket "
             "(before COMMAND)\n"
             "  -h, --help                show this help (also after "
             "COMMAND)\n"
             "  -V, --version             show the version\n"
             "SOCKET defaults to $XDG_RUNTIME_DIR/cudafilterd.sock (else "
             "/tmp/cudafilterd-UID/cudafilterd.sock). Only a daemon of "
             "this user's or root's is answered.\n\n"
             "A set or swap-kernel is answered once it is made (a kernel "
             "read, an element's setter run: status and other clients are "
             "answered meanwhile), or refused with the reason; a stream's "
             "changes are made one after another in the order asked.\n\n"
             "Exit status: 0 ok, 1 the daemon answered an error, 2 usage "
             "error, 3 no daemon answered (within CUDAFILTERCTL_TIMEOUT "
             "seconds, default 60).\n");
}

/* After a usage error's one line naming the problem, as GNU tools do
 * (and cudafilter): the whole usage buried the line above it. */
static void try_help(void)
{
  fputs("Try 'cudafilterctl --help' for more information.\n", stderr);
}

int main(int argc, char **argv)
{
  char *sock = NULL;
  int i = 1;
  if (i < argc && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
    usage(stdout);
    return 0;
  }
  if (i < argc && (!strcmp(argv[i], "-s") || !strcmp(argv[i], "--socket"))) {
    if (i + 1 >= argc || !*argv[i + 1]) {
      fprintf(stderr, "cudafilterctl: %s needs a socket path\n", argv[i]);
      try_help();
      return 2;
    }
    sock = g_strdup(argv[i + 1]);
    i += 2;
  }
  /* -s SOCKET --help: the usage too (QA: "unknown option '--help'") */
  if (i < argc && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
    usage(stdout);
    g_free(sock);
    return 0;
  }
  if (i < argc && (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version"))) {
    printf("cudafilterctl %s\n", cf_version());
    g_free(sock);
    return 0;
  }
  if (i >= argc) {
    fprintf(stderr, "cudafilterctl: missing COMMAND (status, set, "
                    "swap-kernel, restart or reload)\n");
    try_help();
    g_free(sock);
    return 2;
  }
  /* a slip is a usage error here, not "no cudafilterd" from a connection
   * made for nothing */
  static const char *const commands[] = {"status", "set", "swap-kernel",
                                         "restart", "reload"};
  /* the arguments each takes, at least and at most */
  static const int least[] = {0, 3, 2, 1, 0}, most[] = {2, 3, 3, 1, 0};
  size_t c = 0;
  while (c < G_N_ELEMENTS(commands) && strcmp(argv[i], commands[c]))
    c++;
  if (c == G_N_ELEMENTS(commands)) {
    fprintf(stderr, "cudafilterctl: unknown %s '%s'\n",
            argv[i][0] == '-' ? "option" : "command", argv[i]);
    try_help();
    g_free(sock);
    return 2;
  }
  /* COMMAND --help (or -h) after it: the usage, as `cudafilter COMMAND
   * --help` (QA: status said it was a usage error, restart asked the
   * daemon for a stream "--help"); a stream a config names "-h" or
   * "--help" is not addressed from here */
  for (int j = i + 1; j < argc; j++)
    if (!strcmp(argv[j], "-h") || !strcmp(argv[j], "--help")) {
      usage(stdout);
      g_free(sock);
      return 0;
    }
  int nargs = argc - i - 1;
  if (nargs < least[c] || nargs > most[c]) {
    int few = nargs < least[c], n = few ? least[c] : most[c];
    fprintf(stderr, "cudafilterctl: %s takes %s%d argument%s, not %d\n",
            commands[c], least[c] == most[c] ? "" : few ? "at least " : "at most ",
            n, n == 1 ? "" : "s", nargs);
    try_help();
    g_free(sock);
    return 2;
  }
  /* status [--json] [STREAM]: in that order, the one option (QA:
   * "status a b" and "status --xml" went to the daemon, exit 1) */
  if (c == 0 && nargs > 0) {
    bool bad = (nargs == 2 && strcmp(argv[i + 1], "--json")) ||
               (argv[argc - 1][0] == '-' &&
                (nargs == 2 || strcmp(argv[argc - 1], "--json")));
    if (bad) {
      fprintf(stderr, "cudafilterctl: status takes [--json] [STREAM], in "
              "that order, not '%s%s%s'\n", argv[i + 1],
              nargs == 2 ? " " : "", nargs == 2 ? argv[i + 2] : "");
      try_help();
      g_free(sock);
      return 2;
    }
  }
  if (!sock)
    sock = cfd_default_socket();
  /* files are the client's: the daemon runs elsewhere */
  if (!strcmp(argv[i], "swap-kernel") && i + 2 < argc)
    argv[i + 2] = g_canonicalize_filename(argv[i + 2], NULL);
  if (!strcmp(argv[i], "set") && i + 3 < argc &&
      (!strcmp(argv[i + 2], "kernel-file") ||
       !strcmp(argv[i + 2], "kernel2d") ||
       g_str_has_suffix(argv[i + 2], ".kernel-file")))
    argv[i + 3] = g_canonicalize_filename(argv[i + 3], NULL);
  GString *req = g_string_new(NULL);
  for (int j = i; j < argc; j++) {
    if (strchr(argv[j], '\n')) {
      fprintf(stderr, "cudafilterctl: an argument holds a newline\n");
      try_help();
      g_string_free(req, TRUE);
      g_free(sock);
      return 2;
    }
    if (j > i)
      g_string_append_c(req, ' ');
    if (!*argv[j] || strpbrk(argv[j], " \t\"'")) {
      g_string_append_c(req, '"');
      for (const char *p = argv[j]; *p; p++) {
        if (*p == '"' || *p == '\\')
          g_string_append_c(req, '\\');
        g_string_append_c(req, *p);
      }
      g_string_append_c(req, '"');
    } else
      g_string_append(req, argv[j]);
  }
  g_string_append_c(req, '\n');

  GError *e = NULL;
  int rc = 0;
  GString *ans = g_string_new(NULL);
  GSocketClient *cl = g_socket_client_new();
  /* a daemon that is stopped (SIGSTOP, a debugger) or stuck must not
   * hold the client for ever: no answer within the timeout is "no
   * daemon answers" (3); a reload that loads long kernels takes seconds */
  guint timeout = 60;
  const char *t = g_getenv("CUDAFILTERCTL_TIMEOUT");
  if (t && *t) {
    char *end;
    unsigned long v = strtoul(t, &end, 10);
    if (*end || v == 0 || v > 86400) {
      fprintf(stderr, "cudafilterctl: CUDAFILTERCTL_TIMEOUT='%s' is not a "
              "whole number of seconds in 1..86400\n", t);
      g_object_unref(cl);
      g_string_free(ans, TRUE);
      g_string_free(req, TRUE);
      g_free(sock);
      return 2;
    }
    timeout = (guint)v;
  }
  g_socket_client_set_timeout(cl, timeout);
  /* the /tmp fallback's folder: this user's alone, or nothing is sent */
  if (!cfd_private_folder(sock, false, &e)) {
    fprintf(stderr, "cudafilterctl: %s\n", e->message);
    g_object_unref(cl);
    rc = 3;
    goto done;
  }
  GSocketAddress *addr = g_unix_socket_address_new(sock);
  GSocketConnection *conn;
  /* a full listen queue (many clients at once) says "try again": for a
   * few seconds, it is */
  for (int tries = 0;; tries++) {
    conn = g_socket_client_connect(cl, G_SOCKET_CONNECTABLE(addr), NULL, &e);
    if (conn || tries == 100 ||
        !g_error_matches(e, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
      break;
    g_clear_error(&e);
    g_usleep(30000);
  }
  g_object_unref(addr);
  g_object_unref(cl);
  if (!conn) {
    /* a folder or a file given for the socket (-s /run/user/1000, the
     * config's path) is refused as a socket with no listener would be:
     * "Connection refused" would send the user looking for the daemon */
    GStatBuf st;
    if (g_stat(sock, &st) == 0 && !S_ISSOCK(st.st_mode))
      fprintf(stderr, "cudafilterctl: %s is %s, not a socket: give "
              "cudafilterd's control socket (its config's socket =, or "
              "the -s it was started with)\n", sock,
              S_ISDIR(st.st_mode)    ? "a directory"
              : S_ISREG(st.st_mode)  ? "a regular file"
              : S_ISFIFO(st.st_mode) ? "a named pipe"
                                     : "a device");
    else
      fprintf(stderr, "cudafilterctl: no cudafilterd on %s: %s\n", sock,
              e->message);
    rc = 3;
    goto done;
  }
  /* the commands (paths, kernels) go to this user's daemon or root's
   * alone, and only their answers are taken (QA: another user listened
   * on the /tmp fallback, and its "ok" was believed) */
  GCredentials *who = g_socket_get_credentials(
      g_socket_connection_get_socket(conn), &e);
  uid_t peer = who ? (uid_t)g_credentials_get_unix_user(who, NULL) : 0;
  g_clear_object(&who);
  if (e || (peer != getuid() && peer != 0)) {
    if (e)
      fprintf(stderr, "cudafilterctl: %s: %s\n", sock, e->message);
    else
      fprintf(stderr, "cudafilterctl: %s is served by user %u, not by you "
              "(%u) nor root: not your cudafilterd\n", sock, (unsigned)peer,
              (unsigned)getuid());
    g_object_unref(conn);
    rc = 3;
    goto done;
  }
  GOutputStream *os = g_io_stream_get_output_stream(G_IO_STREAM(conn));
  GInputStream *is = g_io_stream_get_input_stream(G_IO_STREAM(conn));
  gssize r = -1;
  char buf[4096];
  if (g_output_stream_write_all(os, req->str, req->len, NULL, NULL, &e))
    while ((r = g_input_stream_read(is, buf, sizeof buf, NULL, &e)) > 0)
      g_string_append_len(ans, buf, r);
  g_object_unref(conn);
  if (r < 0) {
    if (g_error_matches(e, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
      fprintf(stderr, "cudafilterctl: cudafilterd on %s did not answer in "
              "%u s (stopped? CUDAFILTERCTL_TIMEOUT sets the wait)\n",
              sock, timeout);
    else
      fprintf(stderr, "cudafilterctl: %s: %s\n", sock, e->message);
    rc = 3;
    goto done;
  }
  /* the last line is the verdict */
  if (ans->len && ans->str[ans->len - 1] == '\n')
    g_string_truncate(ans, ans->len - 1);
  char *last = strrchr(ans->str, '\n');
  const char *verdict = last ? last + 1 : ans->str;
  if (last)
    printf("%.*s\n", (int)(last - ans->str), ans->str);
  if (g_str_has_prefix(verdict, "error:")) {
    fprintf(stderr, "cudafilterctl: %s\n", verdict + 7);
    rc = 1;
  } else if (strcmp(verdict, "ok")) {
    fprintf(stderr, "cudafilterctl: unexpected answer: %s\n", verdict);
    rc = 1;
  }
done:
  g_clear_error(&e);
  g_string_free(ans, TRUE);
  g_string_free(req, TRUE);
  g_free(sock);
  return rc;
}
