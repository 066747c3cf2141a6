/* cuFFT loaded on first use, with dlopen, as libav is (io/av_lazy.c).
 *
 * libcufft.so.12 carries its device code in a writable segment of 278 MB.
 * Linked, it was mapped into every process that links libcudafilter, with
 * or without a GPU, and LeakSanitizer scans every writable segment for
 * pointers when a process exits: in CI's ASan build each process paid
 * 0.2 s and 270 MB of page-ins at exit for it (the daemon's and the CLI's
 * suites start hundreds: 81 s against 36 s for the CLI's without leak
 * detection). Loaded here, it is mapped only once the CUDA backend makes
 * its first plan, which needs a device.
 *
 * The five cuFFT functions the backend calls are defined here, hidden
 * (CUFFTAPI below): the backend's calls bind to them inside the library,
 * and they call libcufft's. Where it cannot be loaded they return
 * CUFFT_NOT_SUPPORTED and cf_cufft_load_failure() says why
 * (cf_cufft_status adds it to the error). The soname comes from the
 * header compiled against. Only the real build has this file:
 * libcudafilter_emu links the emulated cuFFT (tests/emu) instead. */
#define CUFFTAPI __attribute__((visibility("hidden")))
#include <cufft.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#ifndef CF_CUFFT_SONAME /* tests/test_cufft_lazy.c names a missing one */
#define CF_CUFFT_SONAME "libcufft.so." STR(CUFFT_VER_MAJOR)
#endif

static struct {
  cufftResult (*plan_many)(cufftHandle *plan, int rank, int *n, int *inembed,
                           int istride, int idist, int *onembed, int ostride,
                           int odist, cufftType type, int batch);
  cufftResult (*exec_r2c)(cufftHandle plan, cufftReal *idata,
                          cufftComplex *odata);
  cufftResult (*exec_c2r)(cufftHandle plan, cufftComplex *idata,
                          cufftReal *odata);
  cufftResult (*set_stream)(cufftHandle plan, cudaStream_t stream);
  cufftResult (*destroy)(cufftHandle plan);
} api;
static int loaded;
static char failure[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *find(void *h, const char *name)
{
  void *p = dlsym(h, name);
  if (!p)
    snprintf(failure, sizeof failure, "%s has no function %s",
             CF_CUFFT_SONAME, name);
  return p;
}

static void load(void)
{
  void *h = dlopen(CF_CUFFT_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(failure, sizeof failure, "cannot load %s: %s", CF_CUFFT_SONAME,
             e ? e : "dlopen failed");
    (void)dlerror(); /* frees the thread's message (see device.c) */
    return;
  }
  /* a loaded library stays: dlclose buys nothing here */
  void *f[5] = {find(h, "cufftPlanMany"), find(h, "cufftExecR2C"),
                find(h, "cufftExecC2R"), find(h, "cufftSetStream"),
                find(h, "cufftDestroy")};
  for (int i = 0; i < 5; i++)
    if (!f[i])
      return;
  /* object to function pointers: POSIX dlsym's own convention */
  memcpy(&api.plan_many, &f[0], sizeof f[0]);
  memcpy(&api.exec_r2c, &f[1], sizeof f[1]);
  memcpy(&api.exec_c2r, &f[2], sizeof f[2]);
  memcpy(&api.set_stream, &f[3], sizeof f[3]);
  memcpy(&api.destroy, &f[4], sizeof f[4]);
  loaded = 1;
}

static int ready(void)
{
  return pthread_once(&once, load) == 0 && loaded;
}

const char *cf_cufft_load_failure(void)
{
  return ready() ? NULL : failure[0] ? failure : "cuFFT not loaded";
}

cufftResult CUFFTAPI cufftPlanMany(cufftHandle *plan, int rank, int *n,
                                   int *inembed, int istride, int idist,
                                   int *onembed, int ostride, int odist,
                                   cufftType type, int batch)
{
  if (!ready())
    return CUFFT_NOT_SUPPORTED;
  return api.plan_many(plan, rank, n, inembed, istride, idist, onembed,
                       ostride, odist, type, batch);
}

cufftResult CUFFTAPI cufftExecR2C(cufftHandle plan, cufftReal *idata,
                                  cufftComplex *odata)
{
  return ready() ? api.exec_r2c(plan, idata, odata) : CUFFT_NOT_SUPPORTED;
}

cufftResult CUFFTAPI cufftExecC2R(cufftHandle plan, cufftComplex *idata,
                                  cufftReal *odata)
{
  return ready() ? api.exec_c2r(plan, idata, odata) : CUFFT_NOT_SUPPORTED;
}

cufftResult CUFFTAPI cufftSetStream(cufftHandle plan, cudaStream_t stream)
{
  return ready() ? api.set_stream(plan, stream) : CUFFT_NOT_SUPPORTED;
}

cufftResult CUFFTAPI cufftDestroy(cufftHandle plan)
{
  return ready() ? api.destroy(plan) : CUFFT_NOT_SUPPORTED;
}
