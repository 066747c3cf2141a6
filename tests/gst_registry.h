/* The GStreamer registry of a test (GST_REGISTRY), brought up to date
 * before the test process initialises GStreamer, in a child that ends
 * with _exit.
 *
 * A registry rebuild loads every plugin on the machine; past 2048 quarks
 * GLib moves its quark table and never frees the first one (on purpose,
 * for lock-free readers), and LeakSanitizer reports that 16 KiB. Its
 * stack names GLib's constructor only when ASan records stacks with the
 * slow unwinder (fast_unwind_on_malloc=0, tests/lsan-gst.supp), which made
 * every allocation of the GStreamer and daemon suites 2 to 4 times
 * dearer (the daemon's suite: 120 s against 57 s under ASan). A child
 * that rebuilds the registry and leaves with _exit runs no leak check;
 * the test then finds the registry current and loads only the plugins it
 * uses. Called before anything starts a thread (fork). */
#ifndef CF_TEST_GST_REGISTRY_H
#define CF_TEST_GST_REGISTRY_H

#include <gst/gst.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void gst_registry_prebuild(void)
{
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    gst_init(NULL, NULL); /* scans, writes GST_REGISTRY */
    _exit(0);
  }
  int st = 0;
  /* a failed fork or child: the test process rebuilds it itself */
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
      WEXITSTATUS(st) != 0)
    fprintf(stderr, "note: the GStreamer registry was not prebuilt\n");
}

/* GLib ends a pooled thread (GStreamer's streaming threads among them)
 * after 15 s idle, or half a second after its task when two others are
 * idle already. One that ends while LeakSanitizer stops the process at
 * exit crashes its tracer ("Tracer caught signal 11: ... LeakSanitizer
 * has encountered a fatal error", seen once in CI at the end of a
 * gst_cudafir run whose every test had passed). Idle threads of a test
 * process wait for work until it ends instead: after an "audiotestsrc !
 * queue ! fakesink" pipeline, /proc/self/task counted 4 threads then and
 * 17 s later with this, 4 then 1 without. */
static inline void gst_test_keep_idle_threads(void)
{
  g_thread_pool_set_max_idle_time(0);
  g_thread_pool_set_max_unused_threads(-1);
}

#endif
