// The emulated runtime of cf_emu.h: blocks one after another, each
// block's threads as fibers switched at __syncthreads().
//
// A fiber lives from its first launch to the end of the process: it runs
// the launch's body for its thread of the current block, parks (done), and
// runs it again for the next block or launch. On x86-64 a switch is a few
// register moves (cf_emu_switch below), told to ASan where it runs (it must
// know which stack is in use); elsewhere it goes through ucontext, whose
// swapcontext makes a system call each time (about 10x slower).
#include "cf_emu.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mutex>
#include <unordered_set>
// valgrind is told where the fibers' stacks are (VALGRIND_STACK_REGISTER):
// without that it takes a switch for a stack pointer gone astray and
// reports the fibers' own reads as invalid
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CF_EMU_VALGRIND 1
#endif
#endif
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define CF_EMU_ASAN 1
#endif

#if defined(__x86_64__)
#define CF_EMU_ASM_SWITCH 1
// Save the callee-saved registers on this stack, store its pointer in
// *save_sp, continue on the stack at `to` (which was saved the same way).
extern "C" void cf_emu_switch(void **save_sp, void *to);
asm(R"(
  .text
  .globl cf_emu_switch
  .type cf_emu_switch, @function
cf_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cf_emu_switch, .-cf_emu_switch
  .section .note.GNU-stack,"",@progbits
  .text
)");
#else
#include <ucontext.h>
#endif

namespace cf_emu
{

uint3 thread_idx, block_idx;
dim3 block_dim, grid_dim;
bool (*enqueue_hook)(cudaStream_t, const std::function<void()> &);

namespace
{

const size_t stack_bytes = 64 * 1024;
const size_t max_dyn_shared = 48 * 1024;

struct fiber {
  char *stack;
#ifdef CF_EMU_ASM_SWITCH
  void *sp; // where it stopped
#else
  ucontext_t ctx;
#endif
  uint3 tid;
  bool done;
};
// Fibers never move: the pool holds pointers.
struct fiber_pool {
  std::vector<fiber *> v;
  ~fiber_pool()
  {
    for (fiber *f : v) {
      free(f->stack);
      delete f;
    }
  }
} pool;

#ifdef CF_EMU_ASM_SWITCH
void *scheduler_sp;
#ifdef CF_EMU_ASAN
const void *scheduler_bottom; // the launching thread's stack, for ASan
size_t scheduler_size;
#endif
#else
ucontext_t scheduler;
#endif
fiber *current;
const std::function<void()> *body;
std::vector<unsigned char> shared;
// A launch of a kernel without barriers (CF_LAUNCH_NOSYNC): its threads
// run one after another as plain calls, no fibers; a barrier aborts.
bool direct;
thread_local cudaError_t error = cudaSuccess; // the launching thread's
bool running;

#ifdef CF_EMU_ASM_SWITCH
// cf_emu_switch, with ASan told that the stack [bottom, bottom + size)
// takes over, and when this side runs again, which one it came from
// (*from_bottom, *from_size, if not NULL).
void switch_stack(void **save_sp, void *to, const void *bottom, size_t size,
                  const void **from_bottom, size_t *from_size)
{
#ifdef CF_EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, bottom, size);
  cf_emu_switch(save_sp, to);
  __sanitizer_finish_switch_fiber(fake, from_bottom, from_size);
#else
  (void)bottom, (void)size, (void)from_bottom, (void)from_size;
  cf_emu_switch(save_sp, to);
#endif
}
#endif

// Back to the scheduler, from fiber `me`.
void park(fiber *me)
{
#ifdef CF_EMU_ASM_SWITCH
#ifdef CF_EMU_ASAN // resumed later, perhaps by another thread's launch
  switch_stack(&me->sp, scheduler_sp, scheduler_bottom, scheduler_size,
               &scheduler_bottom, &scheduler_size);
#else
  switch_stack(&me->sp, scheduler_sp, nullptr, 0, nullptr, nullptr);
#endif
#else
  swapcontext(&me->ctx, &scheduler);
#endif
}

// Run fiber f until it parks.
void resume(fiber *f)
{
  current = f;
  thread_idx = f->tid;
#ifdef CF_EMU_ASM_SWITCH
  switch_stack(&scheduler_sp, f->sp, f->stack, stack_bytes, nullptr, nullptr);
#else
  swapcontext(&scheduler, &f->ctx);
#endif
}

// A fiber's whole life: the body for its thread of each block it is
// resumed for, then park as done.
void fiber_main()
{
#ifdef CF_EMU_ASAN // first entry: where from (the scheduler's stack)
  __sanitizer_finish_switch_fiber(nullptr, &scheduler_bottom, &scheduler_size);
#endif
  for (;;) {
    (*body)();
    fiber *me = current;
    me->done = true;
    park(me);
  }
}

fiber *new_fiber()
{
  fiber *f = new fiber();
  f->stack = static_cast<char *>(malloc(stack_bytes));
  if (!f->stack) {
    fprintf(stderr, "cf_emu: out of memory for a thread's stack\n");
    abort();
  }
#ifdef CF_EMU_VALGRIND
  (void)VALGRIND_STACK_REGISTER(f->stack, f->stack + stack_bytes);
#endif
#ifdef CF_EMU_ASM_SWITCH
  // as if it had called cf_emu_switch: six saved registers and the return
  // address fiber_main, which then starts with rsp = 8 mod 16 (the ABI's)
  uintptr_t top = ((uintptr_t)f->stack + stack_bytes) & ~(uintptr_t)15;
  void **sp = (void **)(top - 64);
  for (int i = 0; i < 6; i++)
    sp[i] = nullptr;
  sp[6] = (void *)fiber_main;
  f->sp = sp;
#else
  getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = f->stack;
  f->ctx.uc_stack.ss_size = stack_bytes;
  f->ctx.uc_link = nullptr; // fiber_main never returns
  makecontext(&f->ctx, fiber_main, 0);
#endif
  return f;
}

// The order threads and blocks run in, a seeded choice per launch
// (CF_EMU_SEED): in index order, reversed, or shuffled
// anew each round. On a device the threads between two barriers run in no
// order the kernel may rely on, so a read of shared memory that another
// thread writes in the same round, or a block that reads what another
// block writes, gives results that change with the seed.
unsigned long long order_rng = [] {
  const char *seed = getenv("CF_EMU_SEED"); // see cudart_emu.cc
  return seed ? strtoull(seed, NULL, 0) * 0x9e3779b97f4a7c15ull + 7 : 7;
}();
enum { IN_ORDER, REVERSED, SHUFFLED };

unsigned long long next_order_rand()
{
  order_rng ^= order_rng << 13;
  order_rng ^= order_rng >> 7;
  order_rng ^= order_rng << 17;
  return order_rng;
}

void arrange(std::vector<size_t> &v, int how)
{
  for (size_t i = 0; i < v.size(); i++)
    v[i] = how == REVERSED ? v.size() - 1 - i : i;
  if (how == SHUFFLED)
    for (size_t i = v.size(); i > 1; i--)
      std::swap(v[i - 1], v[next_order_rand() % i]);
}

std::vector<size_t> thread_order, block_order;

uint3 index3(size_t i, dim3 d)
{
  return uint3{(unsigned)(i % d.x), (unsigned)(i / d.x % d.y),
               (unsigned)(i / ((size_t)d.x * d.y))};
}

// One block: its threads in rounds, each unfinished thread running to its
// next barrier or its end; a fiber resumed after its end starts over.
void run_block(size_t nthreads, dim3 block, int how)
{
  for (size_t i = 0; i < nthreads; i++) {
    fiber *t = pool.v[i];
    t->tid = index3(i, block);
    t->done = false;
  }
  thread_order.resize(nthreads);
  arrange(thread_order, how);
  for (size_t left = nthreads; left;) {
    left = 0;
    for (size_t i = 0; i < nthreads; i++) {
      fiber *t = pool.v[thread_order[i]];
      if (t->done)
        continue;
      resume(t);
      left += !t->done;
    }
    if (how == SHUFFLED)
      arrange(thread_order, how);
  }
}

} // namespace

void sync_threads()
{
  if (!running || direct) {
    fprintf(stderr, "cf_emu: __syncthreads() %s\n",
            running ? "in a kernel launched with CF_LAUNCH_NOSYNC"
                    : "outside a launch");
    abort();
  }
  park(current);
}

void *dyn_shared()
{
  return shared.data();
}

namespace
{
std::mutex loads_mu;
std::unordered_set<const void *> loads;
unsigned long n_lazy;
} // namespace

void loaded(const void *kernel)
{
  std::lock_guard<std::mutex> lock(loads_mu);
  loads.insert(kernel);
}

void first_use(const void *kernel)
{
  std::lock_guard<std::mutex> lock(loads_mu);
  if (!loads.insert(kernel).second)
    return;
  n_lazy++;
  const char *req = getenv("CF_EMU_REQUIRE_PRELOAD");
  if (req && !strcmp(req, "1")) {
    Dl_info di;
    const char *name = dladdr(kernel, &di) && di.dli_sname ? di.dli_sname : "?";
    fprintf(stderr,
            "cf_emu: kernel %p (%s) launched before it was loaded: a "
            "device would load it now, inside a stream's work "
            "(CF_EMU_REQUIRE_PRELOAD=1; add it to its file's "
            "cf_k_*_preload)\n",
            kernel, name);
    abort();
  }
}

unsigned long lazy_loads()
{
  std::lock_guard<std::mutex> lock(loads_mu);
  return n_lazy;
}

void set_last_error(cudaError_t e)
{
  error = e;
}

cudaError_t last_error(bool reset)
{
  cudaError_t e = error;
  if (reset)
    error = cudaSuccess;
  return e;
}

bool check(dim3 grid, dim3 block, size_t smem)
{
  const size_t nthreads = (size_t)block.x * block.y * block.z;
  if (nthreads == 0 || nthreads > 1024 || block.z > 64 || grid.x == 0 ||
      grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) {
    error = cudaErrorInvalidConfiguration;
    return false;
  }
  if (smem > max_dyn_shared) {
    error = cudaErrorInvalidValue;
    return false;
  }
  return true;
}

void run(bool nosync, dim3 grid, dim3 block, size_t smem,
         const std::function<void()> &f)
{
  const size_t nthreads = (size_t)block.x * block.y * block.z;
  static std::mutex one_at_a_time; // engines may launch from any thread
  std::lock_guard<std::mutex> hold(one_at_a_time);
  if (running) {
    fprintf(stderr, "cf_emu: a launch inside a kernel\n");
    abort();
  }
  running = true;
  body = &f;
  block_dim = block;
  grid_dim = grid;
  direct = nosync;
  while (!direct && pool.v.size() < nthreads)
    pool.v.push_back(new_fiber());
  const int threads_how = (int)(next_order_rand() % 3);
  block_order.resize((size_t)grid.x * grid.y * grid.z);
  arrange(block_order, (int)(next_order_rand() % 3));
  for (size_t bi : block_order) {
    block_idx = index3(bi, grid);
    shared.assign(smem ? smem : 1, 0xff); // NaN for every float
    if (!direct) {
      run_block(nthreads, block, threads_how);
      continue;
    }
    thread_order.resize(nthreads);
    arrange(thread_order, threads_how);
    for (size_t i : thread_order) {
      thread_idx = index3(i, block);
      f();
    }
  }
  direct = false;
  running = false;
}

} // namespace cf_emu
