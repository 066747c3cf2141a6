/* The pipelined CPU video backend (src/cpu/video_pipe.c, compiled into
 * this test) where a long run takes it: past 2^32 frames (2.3 years at
 * 60 fps, 207 days at 240). Job i lives in slot i % (D + 1); a 32-bit
 * frame count wrapping at 2^32 moved that by 2^32 % (D + 1), so two
 * pending jobs shared a slot and a frame's output was another's (QA: at
 * depth 2 the output of frame 2^32 - 1 was frame 2^32's). Driving 2^32
 * real frames through it takes hours, so the test starts the pipeline's
 * frame count a few frames before 2^32, as a stream that has run that
 * long has it, then filters frames across it. The inner backend is a
 * stand-in that copies each frame (the real one is the video suite's to
 * check): every output must be its own input, D frames later, in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/wait.h>
#include <unistd.h>

/* the internal functions video_pipe.c calls are the stand-ins below
 * (meson.build renames them, so a static libcudafilter.a's own never
 * meet them) */
#include "../src/cpu/video_pipe.c"
#include "check.h"
#include "ref.h"

/* ---- stand-ins for the engine's internals video_pipe.c uses ------------ */

static char pipe_error[512];
cf_status cf_fail(cf_status status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pipe_error, sizeof pipe_error, fmt, ap);
  va_end(ap);
  return status;
}

/* GRAY8 only: one plane of width bytes a row */
cf_status cf_video_check_frame(const cf_video_config *cfg, const cf_frame *f,
                               const char *which)
{
  if (!f->data[0] || f->stride[0] < cfg->width)
    return cf_fail(CF_E_INVALID, "%s frame: no plane or a short stride", which);
  return CF_OK;
}

cf_status cf_video_check_output(const cf_video_config *cfg,
                                const cf_frame *out)
{
  return cf_video_check_frame(cfg, out, "output");
}

cf_status cf_video_check_frames(const cf_video_config *cfg, const cf_frame *in,
                                const cf_frame *out)
{
  cf_status s = cf_video_check_frame(cfg, in, "input");
  return s == CF_OK ? cf_video_check_output(cfg, out) : s;
}

void cf_video_copy_frame(const cf_video_config *cfg, const cf_frame *src,
                         const cf_frame *dst)
{
  for (unsigned r = 0; r < cfg->height; r++)
    memcpy((uint8_t *)dst->data[0] + r * dst->stride[0],
           (const uint8_t *)src->data[0] + r * src->stride[0], cfg->width);
}

/* The inner backend: output = input. */
typedef struct {
  cf_video_config cfg;
} copier;

/* check_engine_thread_mask() where the pipeline's thread ran a frame
 * (-1: none ran), and what it said */
static int pipe_thread_mask = -1;
static char pipe_thread_why[CHECK_WHY];

static cf_status copy_process(void *impl, const cf_frame *in,
                              const cf_frame *out)
{
  pipe_thread_mask = check_engine_thread_mask(pipe_thread_why);
  cf_video_copy_frame(&((copier *)impl)->cfg, in, out);
  return CF_OK;
}
static void copy_reset(void *impl)
{
  (void)impl;
}
static cf_status copy_set_kernel(void *impl, const cf_kernel2d *k)
{
  (void)impl, (void)k;
  return CF_OK;
}
static void copy_describe(const void *impl, char *buf, size_t n)
{
  (void)impl;
  snprintf(buf, n, "copy");
}
static void copy_destroy(void *impl)
{
  free(impl);
}
static size_t copy_latency(const void *impl)
{
  (void)impl;
  return 0;
}
static cf_status copy_flush(void *impl, const cf_frame *out, int *got)
{
  (void)impl, (void)out;
  *got = 0;
  return CF_OK;
}
static void copy_set_output(void *impl, const cf_video_out *o)
{
  (void)impl, (void)o;
}

static cf_status copy_set_base(void *impl, const cf_frame *f)
{
  (void)impl, (void)f;
  return CF_OK;
}

static const cf_video_ops copy_ops = {
    copy_process, copy_reset, copy_set_kernel, copy_describe, copy_destroy,
    copy_latency, copy_flush, copy_set_output, copy_set_base, NULL};

cf_status cf_cpu_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                           cf_fft_mode fft_mode, void **impl,
                           const cf_video_ops **ops)
{
  (void)k, (void)fft_mode;
  copier *c = calloc(1, sizeof *c);
  if (!c)
    return cf_fail(CF_E_NOMEM, "copier: out of memory");
  c->cfg = *cfg;
  *impl = c;
  *ops = &copy_ops;
  return CF_OK;
}

/* The copier takes no state built ahead: a plain swap. */
cf_status cf_cpu_video_set_built(void *impl, const cf_video_ops *ops,
                                 cf_cpu_built *b)
{
  (void)impl, (void)ops, (void)b;
  return CF_E_STATE;
}

/* Nor does it give a history up. */
cf_status cf_cpu_video_take_spent(void *impl, const cf_video_ops *ops,
                                  cf_cpu_built **out)
{
  (void)impl, (void)ops;
  *out = NULL;
  return CF_OK;
}

/* ---- the test ------------------------------------------------------------ */

/* A pipelined engine's config: GRAY8 pictures of w x h, the rest 0. */
static cf_video_config gray8_config(unsigned w, unsigned h, unsigned depth)
{
  cf_video_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.width = w;
  cfg.height = h;
  cfg.format = CF_PIX_GRAY8;
  cfg.scale = 1.0f;
  cfg.pipeline_depth = depth;
  return cfg;
}

/* Every depth 1..CF_VIDEO_MAX_DEPTH, the frame count started up to 3 D
 * frames before 2^32, random frames across it: each output is its own
 * input, D calls later, in order; flush gives the last D. */
static void test_past_2_32_frames(void **state)
{
  (void)state;
  ref_rng rng;
  ref_rng_init(&rng, check_seed);
  enum { W = 7, H = 3, FRAMES = 40 };
  static uint8_t in[FRAMES][W * H], out[W * H];
  for (unsigned depth = 1; depth <= CF_VIDEO_MAX_DEPTH; depth++) {
    unsigned before = (unsigned)ref_rng_range(&rng, 1, 3 * depth);
    set_case("pipeline_depth %u, frame count from 2^32 - %u", depth, before);
    cf_video_config cfg = gray8_config(W, H, depth);
    void *impl;
    const cf_video_ops *ops;
    CHECK(cf_cpu_video_pipe_new(&cfg, NULL, CF_FFT_QUICK, &impl, &ops) == CF_OK,
          "cf_cpu_video_pipe_new: %s", pipe_error);
    vpipe *p = impl;
    pthread_mutex_lock(&p->mu); /* the worker waits: nothing pending */
    p->head = p->next = p->wanted = ((uint64_t)1 << 32) - before;
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < FRAMES; i++) {
      for (int j = 0; j < W * H; j++)
        in[i][j] = (uint8_t)ref_rng_u64(&rng);
      in[i][0] = (uint8_t)i; /* distinct whatever the draw */
      cf_frame fi = {{in[i]}, {W}}, fo = {{out}, {W}};
      memset(out, 0xee, sizeof out);
      CHECK(ops->process(impl, &fi, &fo) == CF_OK, "frame %d: %s", i,
            pipe_error);
      int from = i - (int)depth;
      if (from >= 0)
        CHECK(!memcmp(out, in[from], sizeof out),
              "the output given with frame %d (count 2^32 - %u + %d) is "
              "not frame %d's (it starts %u, frame %d's %u)",
              i, before, i, from, out[0], from, in[from][0]);
    }
    for (unsigned i = 0; i < depth; i++) {
      cf_frame fo = {{out}, {W}};
      int got = 0;
      CHECK(ops->flush(impl, &fo, &got) == CF_OK && got, "flush %u", i);
      int from = FRAMES - (int)depth + (int)i;
      CHECK(!memcmp(out, in[from], sizeof out),
            "flush %u gave frame %u's output, not frame %d's", i, out[0], from);
    }
    ops->destroy(impl);
  }
}

/* The pipeline's thread starts with the application's signals blocked
 * (a fault's not), though the engine is made from a thread that blocks
 * none: as the pool's workers (test_pool), it took SIGINT or SIGCHLD
 * where the application waited for them elsewhere (QA). */
static void test_thread_blocks_signals(void **state)
{
  (void)state;
  enum { W = 5, H = 2 };
  static uint8_t in[W * H], out[W * H];
  cf_video_config cfg = gray8_config(W, H, 1);
  sigset_t none, was;
  sigemptyset(&none);
  CHECK(pthread_sigmask(SIG_SETMASK, &none, &was) == 0, "sigmask");
  void *impl;
  const cf_video_ops *ops;
  cf_status s = cf_cpu_video_pipe_new(&cfg, NULL, CF_FFT_QUICK, &impl, &ops);
  pthread_sigmask(SIG_SETMASK, &was, NULL);
  CHECK(s == CF_OK, "cf_cpu_video_pipe_new: %s", pipe_error);
  pipe_thread_mask = -1;
  cf_frame fi = {{in}, {W}}, fo = {{out}, {W}};
  for (int i = 0; i < 3; i++)
    CHECK(ops->process(impl, &fi, &fo) == CF_OK, "frame %d: %s", i,
          pipe_error);
  ops->destroy(impl);
  CHECK(pipe_thread_mask != -1, "the pipeline's thread ran no frame");
  CHECK(pipe_thread_mask == 0, "the pipeline's thread %s", pipe_thread_why);
}

/* A small box: the pipeline's thread that cannot get its stack (a child
 * under RLIMIT_AS 1 MiB over what it maps) fails the engine with
 * CF_E_NOMEM saying so, not CF_E_INTERNAL (QA, as the pool's did). Not
 * under AddressSanitizer or valgrind, where the limit does not hold. */
static void test_no_memory_for_thread(void **state)
{
  (void)state;
  if (!check_thread_limit_holds())
    skip();
  pid_t pid = check_fork_limited(1u << 20);
  if (pid == 0) {
    cf_video_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.width = 5;
    cfg.height = 4;
    cfg.format = CF_PIX_GRAY8;
    cfg.scale = 1.0f;
    cfg.pipeline_depth = 2;
    /* glibc keeps the stacks of the earlier tests' threads (up to 40
     * MiB) and hands them out again: engines until one needs a new one */
    for (int i = 0; i < 16; i++) {
      void *impl = NULL;
      const cf_video_ops *ops = NULL;
      cf_status s =
          cf_cpu_video_pipe_new(&cfg, NULL, CF_FFT_QUICK, &impl, &ops);
      if (s == CF_OK)
        continue; /* kept: its thread keeps its stack */
      fprintf(stderr, "engine %d: cf_cpu_video_pipe_new: %d: %s\n", i + 1,
              (int)s, pipe_error);
      _exit(s == CF_E_NOMEM && strstr(pipe_error, "out of memory") ? 0 : 5);
    }
    _exit(4);
  }
  int st = check_child_status(pid);
  CHECK(st == 0,
        "child: status %d (3: setrlimit, 4: 16 engines were made, 5: not "
        "CF_E_NOMEM saying out of memory: see stderr)",
        st);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_past_2_32_frames),
      cmocka_unit_test(test_no_memory_for_thread),
      cmocka_unit_test(test_thread_blocks_signals),
  };
  check_seed = ref_seed();
  check_filter_from_env();
  return cmocka_run_group_tests_name("video-pipe", tests, NULL, NULL);
}
