// The CUDA driver API calls GStreamer's gstcuda library makes (1.22's
// gst_cuda_load_library() list), on the emulated device of cudart_emu.cc:
// cuMemAllocPitch is cudaMalloc there, so a GstCudaMemory is device memory
// to cudaPointerGetAttributes and every copy is counted by direction
// (cf_emu_copied). Contexts are handles on a per-thread stack, shared with
// the emulated runtime (ctx_emu.h); the runtime calls made here for the
// driver are the driver's own (cf_emu::driver_call). Graphics
// interop, modules, textures and launches answer CUDA_ERROR_NOT_SUPPORTED
// (gstcuda's memory and buffer pool do not need them).
//
// Exported from the emulated libcudafilter.so.0; tests/emulib's
// libcuda.so.1 depends on it, so that gstcuda's g_module_open of
// "libcuda.so.1" (LD_LIBRARY_PATH) finds these symbols. The types are
// declared here, not taken from the toolkit's cuda.h, whose prototypes
// of the same names have moved on (cuCtxCreate_v4).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "ctx_emu.h"

namespace
{

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef cf_emu::context *CUcontext;
typedef cudaStream_t CUstream;

enum {
  SUCCESS = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  INVALID_DEVICE = 101,
  INVALID_CONTEXT = 201,
  NOT_SUPPORTED = 801,
};

enum { MEM_HOST = 1, MEM_DEVICE = 2, MEM_ARRAY = 3, MEM_UNIFIED = 4 };

struct memcpy2d { // CUDA_MEMCPY2D (the driver's ABI)
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
};

CUresult from_rt(cudaError_t e)
{
  switch (e) {
  case cudaSuccess: return SUCCESS;
  case cudaErrorMemoryAllocation: return OUT_OF_MEMORY;
  case cudaErrorInvalidDevice: return INVALID_DEVICE;
  default: return INVALID_VALUE;
  }
}

// the start of one side of a 2D copy
const void *side(int type, const void *host, CUdeviceptr dev, size_t x,
                 size_t y, size_t pitch, bool *ok)
{
  *ok = type == MEM_HOST || type == MEM_DEVICE || type == MEM_UNIFIED;
  const char *base =
      type == MEM_HOST ? (const char *)host : (const char *)(uintptr_t)dev;
  return base ? base + y * pitch + x : nullptr;
}

// The synchronous call (s unused) or the asynchronous one on s.
CUresult copy2d(const memcpy2d *c, bool sync, CUstream s)
{
  cf_emu::driver_call dc;
  bool ok_s, ok_d;
  const void *src = side(c->srcMemoryType, c->srcHost, c->srcDevice,
                         c->srcXInBytes, c->srcY, c->srcPitch, &ok_s);
  void *dst = (void *)side(c->dstMemoryType, c->dstHost, c->dstDevice,
                           c->dstXInBytes, c->dstY, c->dstPitch, &ok_d);
  if (!ok_s || !ok_d)
    return NOT_SUPPORTED; // CUDA arrays
  if (!src || !dst)
    return INVALID_VALUE;
  if (sync)
    return from_rt(cudaMemcpy2D(dst, c->dstPitch, src, c->srcPitch,
                                c->WidthInBytes, c->Height, cudaMemcpyDefault));
  return from_rt(cudaMemcpy2DAsync(dst, c->dstPitch, src, c->srcPitch,
                                   c->WidthInBytes, c->Height,
                                   cudaMemcpyDefault, s));
}

} // namespace

extern "C" {

CUresult cuInit(unsigned flags)
{
  return flags ? INVALID_VALUE : SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
  *v = 12000;
  return SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
  switch (e) {
  case SUCCESS: *s = "CUDA_SUCCESS"; break;
  case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
  case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
  case NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
  default: *s = "CUDA_ERROR_UNKNOWN"; break;
  }
  return SUCCESS;
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
  return cuGetErrorName(e, s);
}

CUresult cuDeviceGetCount(int *n)
{
  *n = cf_emu::device_count();
  return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
  if (ordinal < 0 || ordinal >= cf_emu::device_count())
    return INVALID_DEVICE;
  *d = ordinal;
  return SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
  if (d < 0 || d >= cf_emu::device_count())
    return INVALID_DEVICE;
  snprintf(name, (size_t)len, "cf_emu (CPU emulation)");
  return SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
  if (d < 0 || d >= cf_emu::device_count())
    return INVALID_DEVICE;
  switch (attr) {
  case 14: *v = 512; break; // TEXTURE_ALIGNMENT
  case 41: *v = 1; break;   // UNIFIED_ADDRESSING
  case 75: *v = 9; break;   // COMPUTE_CAPABILITY_MAJOR
  case 76: *v = 0; break;   // COMPUTE_CAPABILITY_MINOR
  default: *v = 0; break;
  }
  return SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b)
{
  (void)a, (void)b;
  *can = 0;
  return SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice d)
{
  (void)flags;
  if (d < 0 || d >= cf_emu::device_count())
    return INVALID_DEVICE;
  *c = new cf_emu::context{d, false};
  cf_emu::ctx_stack().push_back(*c); // created current, as the driver does
  return SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext c)
{
  if (!c || c->primary) // a primary context is released, not destroyed
    return INVALID_CONTEXT;
  cf_emu::ctx_stack_t &st = cf_emu::ctx_stack();
  for (size_t i = st.size(); i-- > 0;)
    if (st[i] == c)
      st.erase_at(i);
  delete c;
  return SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext c)
{
  if (!c)
    return INVALID_CONTEXT;
  cf_emu::ctx_stack().push_back(c);
  return SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
  if (cf_emu::ctx_stack().empty())
    return INVALID_CONTEXT;
  if (c)
    *c = cf_emu::ctx_stack().back();
  cf_emu::ctx_stack().pop_back();
  return SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *c)
{
  *c = cf_emu::ctx_stack().empty() ? nullptr : cf_emu::ctx_stack().back();
  return SUCCESS;
}

// In place of the current context; NULL pops it (nothing on an empty
// stack).
CUresult cuCtxSetCurrent(CUcontext c)
{
  cf_emu::ctx_stack_t &st = cf_emu::ctx_stack();
  if (!c) {
    if (!st.empty())
      st.pop_back();
  } else if (st.empty()) {
    st.push_back(c);
  } else {
    st.back() = c;
  }
  return SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
  if (d < 0 || d >= cf_emu::device_count())
    return INVALID_DEVICE;
  *flags = 0;
  *active = cf_emu::primary_active(d);
  return SUCCESS;
}

// Device memory needs a current context, as with the driver.
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
  cf_emu::driver_call dc;
  if (cf_emu::ctx_stack().empty())
    return INVALID_CONTEXT;
  void *q = nullptr;
  CUresult r = from_rt(cudaMalloc(&q, bytes));
  *p = (CUdeviceptr)(uintptr_t)q;
  return r;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width,
                            size_t height, unsigned elem)
{
  if (elem != 4 && elem != 8 && elem != 16)
    return INVALID_VALUE;
  *pitch = (width + 511) / 512 * 512; // padded rows, as on the device
  return cuMemAlloc_v2(p, *pitch * height);
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
  cf_emu::driver_call dc;
  return from_rt(cudaFree((void *)(uintptr_t)p));
}

// gstcuda declares the size unsigned int: only its low 32 bits count.
CUresult cuMemAllocHost_v2(void **p, size_t bytes)
{
  cf_emu::driver_call dc;
  if (cf_emu::ctx_stack().empty())
    return INVALID_CONTEXT;
  return from_rt(cudaHostAlloc(p, (unsigned)bytes, 0));
}

CUresult cuMemFreeHost(void *p)
{
  cf_emu::driver_call dc;
  return from_rt(cudaFreeHost(p));
}

CUresult cuMemcpy2D_v2(const memcpy2d *c)
{
  return copy2d(c, true, 0);
}

CUresult cuMemcpy2DAsync_v2(const memcpy2d *c, CUstream s)
{
  return copy2d(c, false, s);
}

CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
  cf_emu::driver_call dc;
  return from_rt(cudaStreamCreateWithFlags(s, flags));
}

CUresult cuStreamDestroy(CUstream s)
{
  cf_emu::driver_call dc;
  return from_rt(cudaStreamDestroy(s));
}

CUresult cuStreamSynchronize(CUstream s)
{
  cf_emu::driver_call dc;
  return from_rt(cudaStreamSynchronize(s));
}

// called through the loader's own prototypes; the arguments are ignored
#define CF_EMU_UNSUPPORTED(name)                                               \
  CUresult name(void)                                                          \
  {                                                                            \
    return NOT_SUPPORTED;                                                      \
  }
CF_EMU_UNSUPPORTED(cuCtxEnablePeerAccess) // one device: never asked
CF_EMU_UNSUPPORTED(cuCtxDisablePeerAccess)
CF_EMU_UNSUPPORTED(cuGraphicsMapResources)
CF_EMU_UNSUPPORTED(cuGraphicsUnmapResources)
CF_EMU_UNSUPPORTED(cuGraphicsResourceSetMapFlags_v2)
CF_EMU_UNSUPPORTED(cuGraphicsSubResourceGetMappedArray)
CF_EMU_UNSUPPORTED(cuGraphicsResourceGetMappedPointer_v2)
CF_EMU_UNSUPPORTED(cuGraphicsUnregisterResource)
CF_EMU_UNSUPPORTED(cuGraphicsGLRegisterImage)
CF_EMU_UNSUPPORTED(cuGraphicsGLRegisterBuffer)
CF_EMU_UNSUPPORTED(cuGLGetDevices_v2)
CF_EMU_UNSUPPORTED(cuModuleLoadData)
CF_EMU_UNSUPPORTED(cuModuleUnload)
CF_EMU_UNSUPPORTED(cuModuleGetFunction)
CF_EMU_UNSUPPORTED(cuTexObjectCreate)
CF_EMU_UNSUPPORTED(cuTexObjectDestroy)
CF_EMU_UNSUPPORTED(cuLaunchKernel)

// GStreamer 1.24's gst_cuda_memory_sync (1.22, which the tests build
// against, has none): a GstCudaMemory with a stream of its own may still
// be in writing on it, and a reader on another stream must call this
// after mapping it for CUDA (GST_MAP_CUDA does not wait). cudaconvolve
// looks it up at run time; this stand-in, preloaded with the emulated
// library, counts the calls (cf_emu_cuda_memory_syncs) and passes them on
// to a real one where GStreamer has it.
static unsigned long long n_memory_syncs;

void gst_cuda_memory_sync(void *mem)
{
  __atomic_add_fetch(&n_memory_syncs, 1, __ATOMIC_RELAXED);
  void (*next)(void *) =
      (void (*)(void *))dlsym(RTLD_NEXT, "gst_cuda_memory_sync");
  if (next)
    next(mem);
}

unsigned long long cf_emu_cuda_memory_syncs(void)
{
  return __atomic_load_n(&n_memory_syncs, __ATOMIC_RELAXED);
}

} // extern "C"
