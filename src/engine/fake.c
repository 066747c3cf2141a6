/* A test-only stand-in for the device, so that the front's switch from
 * CUDA to the CPU mid-stream (engine.c, video.c) runs in CI, where there
 * is no GPU.
 *
 * With CF_TEST_FAKE_DEVICE set (read at each engine's creation, so a test
 * can set it per engine), backend=auto takes the CPU backend wrapped here
 * as if it were the CUDA one: the engine reports CF_BACKEND_CUDA, its
 * description says "fake device", and the front keeps its fallback
 * history exactly as for CUDA. With CF_TEST_FAKE_DEVICE="call:N" the N-th
 * call of that engine that moves data (audio: the backend's process or
 * drain; video: process_frame or flush_frame) fails with CF_E_DEVICE,
 * having done nothing, and the front switches to a real CPU backend; with
 * "kernel:N" its N-th kernel swap fails so, with CF_E_NOMEM (a device
 * allocation failing for a new kernel), and with "base:N" (video) its
 * N-th history frame (cf_engine_set_history_frame) so; any other value
 * fakes a device
 * that never fails. Unset, nothing changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "video_internal.h"

typedef struct fake {
  void *inner;
  const cf_backend_ops *ops;
  const cf_video_ops *vops;
  cf_fake_fault at; /* 0: never */
  unsigned long long calls, swaps, bases;
} fake;

int cf_fake_device(cf_fake_fault *at)
{
  const char *env = getenv("CF_TEST_FAKE_DEVICE");
  if (!env || !*env)
    return 0;
  at->call = strncmp(env, "call:", 5) ? 0 : strtoull(env + 5, NULL, 10);
  at->swap = strncmp(env, "kernel:", 7) ? 0 : strtoull(env + 7, NULL, 10);
  at->base = strncmp(env, "base:", 5) ? 0 : strtoull(env + 5, NULL, 10);
  return 1;
}

static cf_status fake_call(fake *f)
{
  if (++f->calls != f->at.call)
    return CF_OK;
  return cf_fail(CF_E_DEVICE, "fake device: call %llu fails "
                 "(CF_TEST_FAKE_DEVICE=call:%llu)", f->calls, f->at.call);
}

static cf_status fake_swap(fake *f)
{
  if (++f->swaps != f->at.swap)
    return CF_OK;
  return cf_fail(CF_E_NOMEM, "fake device: out of memory for kernel swap "
                 "%llu (CF_TEST_FAKE_DEVICE=kernel:%llu)", f->swaps,
                 f->at.swap);
}

static void fake_describe(const fake *f, char *buf, size_t n)
{
  char inner[256];
  if (f->ops)
    f->ops->describe(f->inner, inner, sizeof inner);
  else
    f->vops->describe(f->inner, inner, sizeof inner);
  snprintf(buf, n, "fake device (CPU, CF_TEST_FAKE_DEVICE), %llu calls "
           "and %llu swaps made, fails at call %llu, swap %llu: %s",
           f->calls, f->swaps, f->at.call, f->at.swap, inner);
}

static void fake_destroy(void *impl)
{
  fake *f = impl;
  if (f->ops)
    f->ops->destroy(f->inner);
  else
    f->vops->destroy(f->inner);
  free(f);
}

static fake *fake_new(cf_fake_fault at)
{
  fake *f = calloc(1, sizeof *f);
  if (f)
    f->at = at;
  else
    cf_fail(CF_E_NOMEM, "fake device: out of memory");
  return f;
}

/* ---- audio ---- */

static cf_status fa_process(void *impl, const float *in, float *out, size_t n)
{
  fake *f = impl;
  cf_status s = fake_call(f);
  return s == CF_OK ? f->ops->process(f->inner, in, out, n) : s;
}

static size_t fa_latency(const void *impl)
{
  const fake *f = impl;
  return f->ops->latency(f->inner);
}

static size_t fa_tail(const void *impl)
{
  const fake *f = impl;
  return f->ops->tail(f->inner);
}

static cf_status fa_drain(void *impl, float *out, size_t cap, size_t *written)
{
  fake *f = impl;
  cf_status s = fake_call(f);
  return s == CF_OK ? f->ops->drain(f->inner, out, cap, written) : s;
}

static void fa_reset(void *impl)
{
  fake *f = impl;
  f->ops->reset(f->inner);
}

static cf_status fa_set_kernel(void *impl, const cf_kernel *k, size_t xfade)
{
  fake *f = impl;
  cf_status s = fake_swap(f);
  return s == CF_OK ? f->ops->set_kernel(f->inner, k, xfade) : s;
}

static void fa_describe(const void *impl, char *buf, size_t n)
{
  fake_describe(impl, buf, n);
}

static const cf_backend_ops fake_audio_ops = {
    fa_process, fa_latency,    fa_tail,     fa_drain,
    fa_reset,   fa_set_kernel, fa_describe, fake_destroy,
};

cf_status cf_fake_fir_new(const cf_audio_config *cfg, const cf_kernel *k,
                          unsigned out_channels, cf_fake_fault at,
                          void **impl, const cf_backend_ops **ops)
{
  fake *f = fake_new(at);
  if (!f)
    return CF_E_NOMEM;
  cf_status s =
      cf_cpu_fir_new(cfg, k, out_channels, CF_FFT_MEASURE, CF_CPU_LATENCY_PLAN,
                     &f->inner, &f->ops);
  if (s != CF_OK) {
    free(f);
    return s;
  }
  *impl = f;
  *ops = &fake_audio_ops;
  return CF_OK;
}

/* ---- video ---- */

static cf_status fv_process(void *impl, const cf_frame *in, const cf_frame *out)
{
  fake *f = impl;
  cf_status s = fake_call(f);
  return s == CF_OK ? f->vops->process(f->inner, in, out) : s;
}

static void fv_reset(void *impl)
{
  fake *f = impl;
  f->vops->reset(f->inner);
}

static cf_status fv_set_kernel(void *impl, const cf_kernel2d *k)
{
  fake *f = impl;
  cf_status s = fake_swap(f);
  return s == CF_OK ? f->vops->set_kernel(f->inner, k) : s;
}

static void fv_describe(const void *impl, char *buf, size_t n)
{
  fake_describe(impl, buf, n);
}

static size_t fv_latency(const void *impl)
{
  const fake *f = impl;
  return f->vops->latency(f->inner);
}

static cf_status fv_flush(void *impl, const cf_frame *out, int *got)
{
  fake *f = impl;
  cf_status s = fake_call(f);
  *got = 0;
  return s == CF_OK ? f->vops->flush(f->inner, out, got) : s;
}

static void fv_set_output(void *impl, const cf_video_out *o)
{
  fake *f = impl;
  f->vops->set_output(f->inner, o);
}

static cf_status fv_set_base(void *impl, const cf_frame *fr)
{
  fake *f = impl;
  if (++f->bases == f->at.base)
    return cf_fail(CF_E_NOMEM, "fake device: out of memory for history "
                   "frame %llu (CF_TEST_FAKE_DEVICE=base:%llu)", f->bases,
                   f->at.base);
  return f->vops->set_base(f->inner, fr);
}

static const cf_video_ops fake_video_ops = {
    fv_process,   fv_reset,   fv_set_kernel, fv_describe,
    fake_destroy, fv_latency, fv_flush,      fv_set_output,
    fv_set_base,  NULL, /* the stand-in for the device does as CUDA does */
};

cf_status cf_fake_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                            cf_fake_fault at, void **impl,
                            const cf_video_ops **ops)
{
  fake *f = fake_new(at);
  if (!f)
    return CF_E_NOMEM;
  cf_status s = cf_cpu_video_new(cfg, k, CF_FFT_MEASURE, &f->inner, &f->vops);
  if (s != CF_OK) {
    free(f);
    return s;
  }
  *impl = f;
  *ops = &fake_video_ops;
  return CF_OK;
}
