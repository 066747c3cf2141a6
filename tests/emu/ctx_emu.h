// CUDA contexts on the emulated devices, shared by the emulated runtime
// (cudart_emu.cc) and driver (cuda_driver_emu.cc), as the driver keeps
// them: each thread has a stack of current contexts (top last); a device
// has one primary context, which the runtime uses. cudaSetDevice binds
// the device's primary context (it replaces the top of the stack, or is
// pushed onto an empty one); a runtime call that needs a context, made
// with none current, binds the primary context of the thread's device
// (the runtime's implicit initialisation). A runtime call made while a
// context of the application's own is current (cuCtxCreate,
// cuCtxPushCurrent: GStreamer's, a player's) works in that context on a
// device; here it is counted (cf_emu_foreign_ctx_calls): a library that
// uses the runtime must bind its device's primary context first, and put
// the caller's back when it returns.
//
// CF_EMU_DEVICES=N (1 to 8, read once; 1 when unset): the emulated
// devices, all the same and sharing the host's memory.
#ifndef CF_TESTS_EMU_CTX_EMU_H
#define CF_TESTS_EMU_CTX_EMU_H

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cf_emu
{
struct context {
  int dev;
  bool primary;
};
// A thread's stack of current contexts, top last: a fixed array, so that
// it has no destructor. A std::vector in thread_local storage is destroyed
// at exit before the atexit handlers run, and one of those (memory.c's,
// releasing cached pinned blocks) calls into the runtime.
struct ctx_stack_t {
  enum { cap = 64 };
  context *v[cap];
  size_t n;
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  context *&back() { return v[n - 1]; }
  context *&operator[](size_t i) { return v[i]; }
  void pop_back() { n--; }
  void push_back(context *c)
  {
    if (n == cap) {
      fprintf(stderr, "cudart emu: more than %d contexts pushed\n", cap);
      abort();
    }
    v[n++] = c;
  }
  void erase_at(size_t i)
  {
    for (size_t j = i + 1; j < n; j++)
      v[j - 1] = v[j];
    n--;
  }
};
ctx_stack_t &ctx_stack();
// the device's primary context; active: bound by the runtime since the
// process began (cuDevicePrimaryCtxGetState)
context *primary_ctx(int dev);
bool primary_active(int dev);
int device_count();
// the emulated driver's own runtime calls, made while this is alive, are
// not the application's: they neither bind a context nor count
struct driver_call {
  driver_call();
  ~driver_call();
};
} // namespace cf_emu

#endif
