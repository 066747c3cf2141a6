// The emulated runtime of cf_emu.h: blocks one after another, each
// block's threads as fibers switched at __syncthreads().
#include "cf_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <vector>

namespace cf_emu {

uint3 thread_idx, block_idx;
dim3 block_dim, grid_dim;

namespace {

const size_t stack_bytes = 64 * 1024;
const size_t max_dyn_shared = 48 * 1024;

struct fiber {
  ucontext_t ctx;
  char *stack; // stack_bytes, kept from launch to launch
  uint3 tid;
  bool done;
};
struct fiber_pool {
  std::vector<fiber> v;
  ~fiber_pool()
  {
    for (fiber &f : v)
      free(f.stack);
  }
} pool;

ucontext_t scheduler;
fiber *current;
const std::function<void()> *body;
std::vector<unsigned char> shared;
cudaError_t error = cudaSuccess;
bool running;

void entry()
{
  (*body)();
  current->done = true; // returning resumes the scheduler (uc_link)
}

// Thread t at its start. (A function of its own: getcontext returns
// twice, as setjmp does, which the callers' loops need not know.)
__attribute__((noinline)) void start_fiber(fiber &t, uint3 tid)
{
  t.tid = tid;
  t.done = false;
  getcontext(&t.ctx);
  t.ctx.uc_stack.ss_sp = t.stack;
  t.ctx.uc_stack.ss_size = stack_bytes;
  t.ctx.uc_link = &scheduler;
  makecontext(&t.ctx, entry, 0);
}

// One block: its threads from the start, in rounds, each unfinished
// thread running to its next barrier or its end.
void run_block(fiber *th, size_t nthreads, dim3 block)
{
  for (size_t i = 0; i < nthreads; i++)
    start_fiber(th[i], uint3{(unsigned)(i % block.x),
                             (unsigned)(i / block.x % block.y),
                             (unsigned)(i / ((size_t)block.x * block.y))});
  for (size_t left = nthreads; left;) {
    left = 0;
    for (size_t i = 0; i < nthreads; i++) {
      if (th[i].done)
        continue;
      current = &th[i];
      thread_idx = th[i].tid;
      swapcontext(&scheduler, &th[i].ctx);
      left += !th[i].done;
    }
  }
}

} // namespace

void sync_threads()
{
  if (!running) {
    fprintf(stderr, "cf_emu: __syncthreads() outside a launch\n");
    abort();
  }
  swapcontext(&current->ctx, &scheduler);
}

void *dyn_shared() { return shared.data(); }

cudaError_t last_error(bool reset)
{
  cudaError_t e = error;
  if (reset)
    error = cudaSuccess;
  return e;
}

void run(dim3 grid, dim3 block, size_t smem, const std::function<void()> &f)
{
  const size_t nthreads = (size_t)block.x * block.y * block.z;
  if (nthreads == 0 || nthreads > 1024 || block.z > 64 || grid.x == 0 ||
      grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) {
    error = cudaErrorInvalidConfiguration;
    return;
  }
  if (smem > max_dyn_shared) {
    error = cudaErrorInvalidValue;
    return;
  }
  if (running) {
    fprintf(stderr, "cf_emu: a launch inside a kernel\n");
    abort();
  }
  running = true;
  body = &f;
  block_dim = block;
  grid_dim = grid;
  while (pool.v.size() < nthreads) {
    fiber f = {};
    if (!(f.stack = static_cast<char *>(malloc(stack_bytes)))) {
      fprintf(stderr, "cf_emu: out of memory for a thread's stack\n");
      abort();
    }
    pool.v.push_back(f);
  }
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        block_idx = uint3{bx, by, bz};
        shared.assign(smem ? smem : 1, 0xff); // NaN for every float
        run_block(pool.v.data(), nthreads, block);
      }
  running = false;
}

} // namespace cf_emu
