// The CUDA runtime and cuFFT calls src/cuda/ makes, on the CPU: what
// libcudafilter_emu links instead of libcudart and libcufft, so that the
// whole CUDA backend (host code as built for the device, kernels on
// tests/emu/cf_emu.h) runs the engine's own tests in CI.
//
// One emulated device ("cf_emu", sm_90; CF_EMU_DEVICES=N for N of them).
// Device memory is host memory. Contexts as the driver keeps them
// (ctx_emu.h).
//
// Streams are queues, run as late as the CUDA programming guide allows:
// an operation runs only when the host has to see it done (a stream or
// event synchronisation, cudaDeviceSynchronize, cudaFree, a synchronous
// copy to the host), or when a stream that waits on it (cudaStreamWaitEvent)
// is run that far, and at each of those points other streams may run some
// of their operations first (a seeded choice, CF_EMU_SEED, fixed if unset:
// not CF_TEST_SEED, so that a test's rerun line replays it). So a missing
// cudaStreamWaitEvent, a host write into a pinned buffer an upload has not
// read yet, or a host read of a download that has not run, shows as wrong
// data in the results, where a device would show it now and then.
// CF_EMU_STREAMS=eager runs every operation when it is enqueued (to tell a
// synchronisation bug from any other). The legacy default stream (0,
// cudaStreamLegacy, cudaStreamPerThread) is one more queue, ordered against
// blocking streams as the runtime orders it; copies from pageable memory
// take their source when called, and those to pageable memory return done,
// as the runtime's documented synchronisation behaviour says.
//
// A stream being captured records its operations (copies, memsets,
// kernels, FFTs) into the graph, and a graph launch enqueues them. Pinned
// memory (cudaHostAlloc) is tracked, so cudaPointerGetAttributes tells it
// from pageable memory as the driver does. cuFFT's R2C/C2R plans are FFTW
// plans of the same layout (unnormalised, as cuFFT).
#include <cuda_runtime_api.h>
#include <cufft.h>
#include <fftw3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ctx_emu.h"

// the CPU backend's FFTW planner lock (src/cpu/fft.h)
extern "C" void cf_fft_planner_lock(void);
extern "C" void cf_fft_planner_unlock(void);

namespace cf_emu
{
// kernels' launches go through this (cf_emu.h)
extern bool (*enqueue_hook)(cudaStream_t, const std::function<void()> &);
// the thread's last error, one slot for the runtime's calls and the
// kernels' launches (cf_emu.cc), as in cudart
cudaError_t last_error(bool reset);
void set_last_error(cudaError_t e);
} // namespace cf_emu

// Copy order (cf_emu_uploads_after_downloads): for each stream, the
// latest device-to-host copy of it (a global sequence number) that an
// operation is ordered after, through its own stream, events and the
// legacy stream's rules.
typedef std::map<unsigned long long, unsigned long long> d2h_order;

// A captured operation: a copy's direction (as `copied`'s index), else -1.
struct rec_op {
  std::function<void()> fn;
  int dir;
};

// An operation of a stream: fn, or (fn empty) a wait until stream `sid`
// has run `pos` operations; dir: a copy's direction (0 to the device, 1
// to the host), else -1.
struct pending_op {
  std::function<void()> fn;
  unsigned long long sid, pos;
  int dir = -1;
};
struct CUstream_st {
  bool capturing;
  std::vector<rec_op> ops; // what the capture recorded
  unsigned long long id;
  bool blocking; // created without cudaStreamNonBlocking
  std::deque<pending_op> q;
  unsigned long long enq, done; // operations enqueued, run
  bool stepping; // its first operation is running (a wait, perhaps)
  d2h_order after; // what its next operation is ordered after
};
struct CUevent_st {
  unsigned long long sid, pos; // the recorded work: sid's first pos ops
  bool timing;                 // not cudaEventDisableTiming
  d2h_order after;             // the recorded work's (copy order)
  unsigned long long seq;      // events recorded before this record
};
struct CUgraph_st {
  std::vector<rec_op> ops;
};
struct CUgraphExec_st {
  std::vector<rec_op> ops;
};

namespace
{

std::mutex lock; // the maps below (engines may run on several threads)
std::map<const char *, size_t> pinned, device; // start -> bytes
// A failed call: its error also left as the thread's last error, which
// the next launch's cudaGetLastError() returns unless someone clears it.
cudaError_t fail(cudaError_t e)
{
  cf_emu::set_last_error(e);
  return e;
}

// ---- streams -----------------------------------------------------------------

std::recursive_mutex qlock; // every queue; held while operations run
CUstream_st legacy_stream{false, {}, 1, true, {}, 0, 0, false, {}};
std::map<unsigned long long, CUstream_st *> live = {{1, &legacy_stream}};
unsigned long long next_id = 2;
bool eager, wandering = true;
unsigned long long rng; // xorshift64, the choice of other streams to run

struct queue_setup {
  queue_setup()
  {
    const char *m = getenv("CF_EMU_STREAMS");
    eager = m && !strcmp(m, "eager");
    wandering = !(m && !strcmp(m, "lazy")); // lazy: no other stream first
    // not CF_TEST_SEED: a failure seen with the clock's seed must replay
    // with CF_TEST_SEED set to it
    const char *seed = getenv("CF_EMU_SEED");
    rng = seed ? strtoull(seed, NULL, 0) * 2654435761ull + 1 : 1;
  }
} setup_queues;

unsigned long long next_rand()
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

// 0, cudaStreamLegacy (1) and cudaStreamPerThread (2) are handles, not
// streams of ours: all three are the legacy stream here.
bool ours(cudaStream_t s)
{
  return (uintptr_t)s > 2;
}

CUstream_st *resolve(cudaStream_t s)
{
  return ours(s) ? s : &legacy_stream;
}

bool reached(unsigned long long sid, unsigned long long pos);
void run_to(CUstream_st *s, unsigned long long pos);

// Copies queued and not run yet, by direction (0 to the device, 1 to the
// host), and the host's waits for an upload while no download was queued
// (cf_emu_lone_upload_waits).
unsigned long long pending_copies[2], lone_upload_waits;

// Run s's first operation.
void step(CUstream_st *s)
{
  pending_op op = std::move(s->q.front());
  s->q.pop_front();
  if (op.dir == 0 || op.dir == 1)
    pending_copies[op.dir]--;
  s->stepping = true;
  if (op.fn)
    op.fn();
  else if (!reached(op.sid, op.pos))
    run_to(live[op.sid], op.pos);
  s->stepping = false;
  s->done++;
}

// Now and then, some operations of the streams other than s first: any
// order that keeps each stream's order and its waits is one a device may
// take. Only operations that need no other stream to run: a wait that is
// not over could lead back to a stream in the middle of its own wait.
void wander(CUstream_st *s)
{
  if (!wandering)
    return;
  // mostly one round over the other streams; now and then a few, so that
  // a stream whose wait another stream's round just ended goes on
  unsigned rounds = next_rand() % 4 ? 1 : 2 + (unsigned)(next_rand() % 3);
  for (unsigned r = 0; r < rounds; r++)
    for (auto &kv : live) {
      CUstream_st *t = kv.second;
      if (t == s || t->stepping || t->q.empty() || next_rand() % 4)
        continue;
      for (unsigned long long k = next_rand() % 3 + 1; k && !t->q.empty();
           k--) {
        const pending_op &op = t->q.front();
        if (!op.fn && !reached(op.sid, op.pos))
          break;
        step(t);
      }
    }
}

// The host waits for s's first `pos` operations: count it when they hold
// an upload (not behind a wait for another stream) and no download is
// queued anywhere, before anything runs.
void note_host_wait(CUstream_st *s, unsigned long long pos)
{
  if (pending_copies[1] || s->done >= pos)
    return;
  unsigned long long n = pos - s->done;
  for (const pending_op &op : s->q) {
    if (!n--)
      break;
    if (op.dir == 0) {
      lone_upload_waits++;
      return;
    }
  }
}

// Run s until it has run `pos` operations.
void run_to(CUstream_st *s, unsigned long long pos)
{
  if (s->done < pos)
    wander(s);
  while (s->done < pos)
    step(s);
}

bool reached(unsigned long long sid, unsigned long long pos)
{
  auto it = live.find(sid);
  return it == live.end() || it->second->done >= pos; // destroyed: ran
}

// Copy order: the sequence of the last device-to-host copy queued, each
// live stream's last one, and the uploads ordered after the latest
// download of another stream.
unsigned long long d2h_seq, n_up_after_down;
// ... and the uploads ordered after a download, of any stream their own
// included, queued since the test's last cf_emu_copy_epoch() (0: none)
unsigned long long epoch_first_d2h, n_up_after_epoch_down;
std::map<unsigned long long, unsigned long long> last_d2h;

void order_after(d2h_order &a, const d2h_order &b)
{
  for (const auto &kv : b)
    if (a[kv.first] < kv.second)
      a[kv.first] = kv.second;
}

// A copy of direction `dir` is queued on s (copy order).
void note_copy(CUstream_st *s, int dir)
{
  if (dir == 0) {
    unsigned long long t = 0, seq = 0; // the latest download elsewhere
    for (const auto &kv : last_d2h)
      if (kv.first != s->id && kv.second > seq)
        t = kv.first, seq = kv.second;
    auto it = s->after.find(t);
    if (seq && it != s->after.end() && it->second >= seq)
      n_up_after_down++;
    if (epoch_first_d2h)
      for (const auto &kv : s->after)
        if (kv.second >= epoch_first_d2h) {
          n_up_after_epoch_down++;
          break;
        }
  } else if (dir == 1) {
    s->after[s->id] = last_d2h[s->id] = ++d2h_seq;
  }
}

void push(CUstream_st *s, pending_op op)
{
  if (op.dir == 0 || op.dir == 1)
    pending_copies[op.dir]++;
  s->q.push_back(std::move(op));
  s->enq++;
}

// Queue fn (a copy of direction dir, or -1) on s, behind what the legacy
// stream's ordering puts before it.
void enqueue_on(CUstream_st *s, std::function<void()> fn, int dir = -1)
{
  std::lock_guard<std::recursive_mutex> g(qlock);
  if (s == &legacy_stream) { // after all earlier work of blocking streams
    for (auto &kv : live) {
      CUstream_st *t = kv.second;
      if (t != s && t->blocking)
        order_after(s->after, t->after);
      if (t != s && t->blocking && t->done < t->enq)
        push(s, pending_op{nullptr, t->id, t->enq});
    }
  } else if (s->blocking) {
    order_after(s->after, legacy_stream.after);
    if (legacy_stream.done < legacy_stream.enq)
      push(s, pending_op{nullptr, legacy_stream.id, legacy_stream.enq});
  }
  note_copy(s, dir);
  push(s, pending_op{std::move(fn), 0, 0, dir});
  if (eager)
    run_to(s, s->enq);
}

void sync_stream(CUstream_st *s)
{
  std::lock_guard<std::recursive_mutex> g(qlock);
  note_host_wait(s, s->enq);
  run_to(s, s->enq);
}

void sync_device()
{
  std::lock_guard<std::recursive_mutex> g(qlock);
  for (auto &kv : live)
    run_to(kv.second, kv.second->enq);
}

// Queue op (a copy of direction dir, or -1) on s, or record it when s is
// being captured.
cudaError_t enqueue(cudaStream_t s, std::function<void()> op, int dir = -1)
{
  if (ours(s) && s->capturing)
    s->ops.push_back(rec_op{std::move(op), dir});
  else
    enqueue_on(resolve(s), std::move(op), dir);
  return cudaSuccess;
}

void need_ctx(); // below

bool take_launch(cudaStream_t s, const std::function<void()> &op)
{
  need_ctx();
  enqueue(s, op);
  return true;
}

struct hook_setter {
  hook_setter() { cf_emu::enqueue_hook = take_launch; }
} set_hook;

bool within(const std::map<const char *, size_t> &m, const void *p)
{
  auto it = m.upper_bound((const char *)p);
  if (it == m.begin())
    return false;
  --it;
  return (const char *)p < it->first + it->second;
}

bool on_device(const void *p)
{
  std::lock_guard<std::mutex> g(lock);
  return within(device, p);
}

bool is_pinned(const void *p)
{
  std::lock_guard<std::mutex> g(lock);
  return within(pinned, p);
}

// Bytes copied host to device, device to host, device to device and host
// to host (cf_emu_copied).
std::atomic<unsigned long long> copied[4];

// ---- contexts (ctx_emu.h) ---------------------------------------------------

thread_local int rt_dev;       // the runtime's device for this thread
thread_local int driver_depth; // inside the emulated driver's own calls
std::atomic<unsigned long long> foreign_calls;

// A runtime call that works in the current context: none current binds
// the thread's device's primary context; an application's own context
// current is counted.
void need_ctx()
{
  if (driver_depth)
    return;
  cf_emu::ctx_stack_t &st = cf_emu::ctx_stack();
  if (st.empty())
    st.push_back(cf_emu::primary_ctx(rt_dev));
  else if (!st.back()->primary)
    foreign_calls++;
}

// The calls that need no context (device enumeration, errors).
bool contextless(const char *fn)
{
  static const char *const none[] = {
      "cudaGetDeviceCount",
      "cudaSetDevice",
      "cudaGetDevice",
      "cudaGetDeviceProperties",
      "cudaGetLastError",
      "cudaPeekAtLastError",
      "cudaGetDriverEntryPointByVersion",
  };
  for (const char *n : none)
    if (!strcmp(fn, n))
      return true;
  return false;
}

// Calls of each runtime and cuFFT function (cf_emu_calls). Looked up
// without a std::string (std::less<>): a name seen before costs no heap
// allocation, so that tests/test_rt_alloc.c can count ours around a call.
std::mutex count_lock;
std::map<std::string, unsigned long long, std::less<>> calls_of;
void count_call(const char *fn)
{
  if (!contextless(fn))
    need_ctx();
  std::lock_guard<std::mutex> g(count_lock);
  auto it = calls_of.find(std::string_view(fn));
  if (it != calls_of.end())
    it->second++;
  else
    calls_of.emplace(fn, 1);
}

// While a thread is inside one of the runtime's functions: what they
// allocate (their queues, the operations in them) is the emulated
// device's, which tests/test_rt_alloc.c leaves out of its count
// (cf_emu_in_runtime), as a driver's own memory is not the caller's.
thread_local int in_runtime;
struct runtime_scope {
  runtime_scope() { in_runtime++; }
  ~runtime_scope() { in_runtime--; }
};
// At the top of each runtime and cuFFT function: counted, and inside.
#define EMU_ENTER()                                                            \
  runtime_scope emu_scope_;                                                    \
  count_call(__func__)

// The direction of a copy (an index of `copied`), or -1 where `kind`
// contradicts the pointers: the driver refuses a copy whose kind names
// the wrong side (cudaMemcpyDefault infers it, as on a UVA system).
int copy_dir(const void *dst, const void *src, cudaMemcpyKind kind)
{
  bool d = on_device(dst), s = on_device(src);
  int dir = s ? (d ? 2 : 1) : (d ? 0 : 3);
  switch (kind) {
  case cudaMemcpyHostToDevice: return dir == 0 ? dir : -1;
  case cudaMemcpyDeviceToHost: return dir == 1 ? dir : -1;
  case cudaMemcpyDeviceToDevice: return dir == 2 ? dir : -1;
  case cudaMemcpyHostToHost: return dir == 3 ? dir : -1;
  default: return dir;
  }
}

} // namespace

extern "C" {

// For tests: the bytes the emulated device copied so far, by direction.
void cf_emu_copied(unsigned long long *h2d, unsigned long long *d2h,
                   unsigned long long *d2d)
{
  sync_device(); // what was enqueued has been copied
  *h2d = copied[0];
  *d2h = copied[1];
  *d2d = copied[2];
}

// For tests: host-to-device copies queued so far that were ordered after
// the latest device-to-host copy of another stream queued before them.
// In a pipeline of slots, step i + 1's upload waiting for step i's
// download: the copies of consecutive steps cannot overlap.
unsigned long long cf_emu_uploads_after_downloads(void)
{
  std::lock_guard<std::recursive_mutex> g(qlock);
  return n_up_after_down;
}

// For tests: the host's stream and event synchronisations so far that
// waited for an upload while no download was queued on any stream. In a
// pipeline whose caller passes pinned frames both ways, the previous
// frame's download should be queued before the wait for this one's
// upload, so that the two copies (one engine each way) overlap.
unsigned long long cf_emu_lone_upload_waits(void)
{
  std::lock_guard<std::recursive_mutex> g(qlock);
  return lone_upload_waits;
}

// For tests: from now on, cf_emu_uploads_after_epoch_downloads counts
// the uploads ordered after a download queued after this call, on any
// stream, their own included. A test calls it before each frame: within
// one frame's bands, an upload queued behind a download (a stream that
// uploads, computes and downloads in turn) waits for that band's compute.
void cf_emu_copy_epoch(void)
{
  std::lock_guard<std::recursive_mutex> g(qlock);
  epoch_first_d2h = d2h_seq + 1;
}

unsigned long long cf_emu_uploads_after_epoch_downloads(void)
{
  std::lock_guard<std::recursive_mutex> g(qlock);
  return n_up_after_epoch_down;
}

// Event synchronisations by lag: the events recorded (any stream) between
// the record waited for and the wait, up to SYNC_LAGS - 1 (the last
// counts that many or more).
#define SYNC_LAGS 65
static unsigned long long records, sync_lag[SYNC_LAGS];

// For tests: cudaEventSynchronize calls so far whose event had fewer
// than `lag` events recorded after it when the host waited: the host
// waiting for work it has just queued, where a pipeline should find it
// done (lag <= SYNC_LAGS - 1).
unsigned long long cf_emu_syncs_within(unsigned lag)
{
  std::lock_guard<std::recursive_mutex> g(qlock);
  unsigned long long n = 0;
  for (unsigned i = 0; i < lag && i < SYNC_LAGS; i++)
    n += sync_lag[i];
  return n;
}

// For tests: whether this thread is inside a runtime or cuFFT function.
int cf_emu_in_runtime(void)
{
  return in_runtime;
}

// For tests: the calls of runtime or cuFFT function `fn` so far.
unsigned long long cf_emu_calls(const char *fn)
{
  std::lock_guard<std::mutex> g(count_lock);
  auto it = calls_of.find(fn);
  return it == calls_of.end() ? 0 : it->second;
}

// For tests: cudaHostAlloc fails beyond `bytes` (pinned memory runs out
// on a real machine: the driver's limits, RLIMIT_MEMLOCK); SIZE_MAX: no
// limit but the emulator's own (1 TiB).
static std::atomic<size_t> pinned_limit{SIZE_MAX};
void cf_emu_pinned_limit(size_t bytes)
{
  pinned_limit = bytes;
}

// For tests: cudaHostAlloc calls so far, and the pinned bytes now live.
void cf_emu_host_allocs(unsigned long long *calls,
                        unsigned long long *live_bytes)
{
  *calls = cf_emu_calls("cudaHostAlloc");
  std::lock_guard<std::mutex> g(lock);
  unsigned long long sum = 0;
  for (const auto &b : pinned)
    sum += b.second;
  *live_bytes = sum;
}

// For tests: runtime calls made while an application's own context was
// current (ctx_emu.h).
unsigned long long cf_emu_foreign_ctx_calls(void)
{
  return foreign_calls.load();
}

cudaError_t cudaGetDeviceCount(int *count)
{
  EMU_ENTER();
  *count = cf_emu::device_count();
  return cudaSuccess;
}

// The device's primary context in place of the current one (pushed onto
// an empty stack), as cudaSetDevice does since CUDA 12.
cudaError_t cudaSetDevice(int device_id)
{
  EMU_ENTER();
  if (device_id < 0 || device_id >= cf_emu::device_count())
    return fail(cudaErrorInvalidDevice);
  rt_dev = device_id;
  cf_emu::ctx_stack_t &st = cf_emu::ctx_stack();
  if (st.empty())
    st.push_back(cf_emu::primary_ctx(device_id));
  else
    st.back() = cf_emu::primary_ctx(device_id);
  return cudaSuccess;
}

// The current context's device, else the thread's.
cudaError_t cudaGetDevice(int *device_id)
{
  EMU_ENTER();
  cf_emu::ctx_stack_t &st = cf_emu::ctx_stack();
  *device_id = st.empty() ? rt_dev : st.back()->dev;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device_id)
{
  EMU_ENTER();
  if (device_id < 0 || device_id >= cf_emu::device_count())
    return fail(cudaErrorInvalidDevice);
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "cf_emu (CPU emulation)");
  prop->major = 9;
  prop->minor = 0;
  prop->totalGlobalMem = (size_t)16 << 30;
  prop->multiProcessorCount = 4;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->maxThreadsPerBlock = 1024;
  prop->warpSize = 32;
  prop->asyncEngineCount = 2;
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e)
{
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorLaunchFailure: return "unspecified launch failure";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  default: return "emulated CUDA error";
  }
}

const char *cudaGetErrorName(cudaError_t e)
{
  switch (e) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  default: return "cudaErrorUnknown";
  }
}

cudaError_t cudaGetLastError(void)
{
  EMU_ENTER();
  return cf_emu::last_error(true);
}

cudaError_t cudaPeekAtLastError(void)
{
  EMU_ENTER();
  return cf_emu::last_error(false);
}

// An allocation recorded in `m` (device or pinned memory), aligned as the
// runtime aligns it: cudaMalloc to 256 bytes, cudaHostAlloc to a page.
static cudaError_t tracked_alloc(std::map<const char *, size_t> &m, void **p,
                                 size_t bytes, size_t align)
{
  // beyond 1 TiB refused outright, as a device would: a sanitizer's
  // allocator aborts on such a size instead of failing
  if (bytes > ((size_t)1 << 40) ||
      posix_memalign(p, align, bytes ? bytes : 1) != 0) {
    *p = nullptr;
    return fail(cudaErrorMemoryAllocation);
  }
  std::lock_guard<std::mutex> g(lock);
  m[(const char *)*p] = bytes;
  return cudaSuccess;
}

static cudaError_t tracked_free(std::map<const char *, size_t> &m, void *p)
{
  if (!p)
    return cudaSuccess;
  {
    std::lock_guard<std::mutex> g(lock);
    if (!m.erase((const char *)p))
      return fail(cudaErrorInvalidValue);
  }
  free(p);
  return cudaSuccess;
}

// For tests: cudaMalloc fails beyond `bytes` an allocation (a device
// that runs out of memory mid-stream); SIZE_MAX: no limit but the 1 TiB.
static std::atomic<size_t> device_limit{SIZE_MAX};
void cf_emu_device_limit(size_t bytes)
{
  device_limit = bytes;
}

// For tests: while set, cufftPlanMany fails with CUFFT_ALLOC_FAILED, as
// cuFFT does when the device has no memory for a plan's work area
// (cudaMalloc goes on as cf_emu_device_limit says).
static std::atomic<bool> fft_plans_fail{false};
void cf_emu_fft_plan_fail(int fail)
{
  fft_plans_fail = fail != 0;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
  EMU_ENTER();
  if (bytes > device_limit) {
    *p = nullptr;
    return fail(cudaErrorMemoryAllocation);
  }
  cudaError_t e = tracked_alloc(device, p, bytes, 256);
  if (e == cudaSuccess) // NaN bytes: a read of what was never written shows
    memset(*p, 0xff, bytes);
  return e;
}

cudaError_t cudaFree(void *p)
{
  EMU_ENTER();
  sync_device(); // as the runtime does
  return tracked_free(device, p);
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
  EMU_ENTER();
  (void)flags;
  if (bytes > pinned_limit) {
    *p = nullptr;
    return fail(cudaErrorMemoryAllocation);
  }
  return tracked_alloc(pinned, p, bytes, 4096);
}

cudaError_t cudaFreeHost(void *p)
{
  EMU_ENTER();
  sync_device();
  return tracked_free(pinned, p);
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
                                     const void *p)
{
  EMU_ENTER();
  memset(a, 0, sizeof *a);
  std::lock_guard<std::mutex> g(lock);
  if (within(pinned, p)) {
    a->type = cudaMemoryTypeHost;
    a->hostPointer = (void *)p;
    a->devicePointer = (void *)p;
  } else if (within(device, p)) {
    a->type = cudaMemoryTypeDevice;
    a->devicePointer = (void *)p;
  } else {
    a->type = cudaMemoryTypeUnregistered;
    a->device = -2;
  }
  return cudaSuccess;
}

// A 2D copy on stream s (the legacy one for the synchronous calls, `sync`),
// with the runtime's documented behaviour towards the host: from pageable
// memory the source is taken at the call; to pageable memory, and for a
// synchronous call to any host memory (or from pinned memory), the call
// returns with the copy done; the rest is queued.
static cudaError_t copy2d(void *dst, size_t dpitch, const void *src,
                          size_t spitch, size_t width, size_t height,
                          enum cudaMemcpyKind kind, cudaStream_t s, bool sync)
{
  int dir = copy_dir(dst, src, kind);
  if (dir < 0 || width > dpitch || width > spitch)
    return fail(cudaErrorInvalidValue);
  bool d_dev = dir == 0 || dir == 2, s_dev = dir == 1 || dir == 2;
  bool d_pageable = !d_dev && !is_pinned(dst);
  bool s_pageable = !s_dev && !is_pinned(src);
  bool capturing = ours(s) && s->capturing;
  // the rows the copy reads: src, or a copy of it taken now
  std::shared_ptr<std::vector<char>> staged;
  const char *from = (const char *)src;
  size_t from_pitch = spitch;
  if (s_pageable && !d_pageable && !capturing) {
    staged = std::make_shared<std::vector<char>>(width * height);
    for (size_t r = 0; r < height; r++)
      memcpy(staged->data() + r * width, from + r * spitch, width);
    from = staged->data();
    from_pitch = width;
  }
  std::function<void()> op = [=]() {
    (void)staged; // kept alive until the copy ran
    copied[dir] += width * height;
    for (size_t r = 0; r < height; r++)
      memmove((char *)dst + r * dpitch, from + r * from_pitch, width);
  };
  if (capturing)
    return enqueue(s, std::move(op), dir);
  std::lock_guard<std::recursive_mutex> g(qlock);
  CUstream_st *q = resolve(s);
  enqueue_on(q, std::move(op), dir);
  if (d_pageable || (sync && !(d_dev && s_dev) && !s_pageable))
    run_to(q, q->enq);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
                       enum cudaMemcpyKind kind)
{
  EMU_ENTER();
  return copy2d(dst, n, src, n, n, 1, kind, 0, true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind, cudaStream_t s)
{
  EMU_ENTER();
  return copy2d(dst, n, src, n, n, 1, kind, s, false);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src,
                         size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind)
{
  EMU_ENTER();
  return copy2d(dst, dpitch, src, spitch, width, height, kind, 0, true);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t s)
{
  EMU_ENTER();
  return copy2d(dst, dpitch, src, spitch, width, height, kind, s, false);
}

// Asynchronous towards the host unless the target is pinned host memory.
cudaError_t cudaMemset(void *p, int v, size_t n)
{
  EMU_ENTER();
  std::lock_guard<std::recursive_mutex> g(qlock);
  enqueue_on(&legacy_stream, [=]() { memset(p, v, n); });
  if (is_pinned(p))
    run_to(&legacy_stream, legacy_stream.enq);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
  EMU_ENTER();
  return enqueue(s, [=]() { memset(p, v, n); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
  EMU_ENTER();
  std::lock_guard<std::recursive_mutex> g(qlock);
  *s = new CUstream_st(); // not capturing, nothing queued
  (*s)->id = next_id++;
  (*s)->blocking = !(flags & cudaStreamNonBlocking);
  live[(*s)->id] = *s;
  return cudaSuccess;
}

// What was queued still runs (the runtime lets it finish in the background).
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
  EMU_ENTER();
  if (!ours(s))
    return fail(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::recursive_mutex> g(qlock);
  run_to(s, s->enq);
  live.erase(s->id);
  last_d2h.erase(s->id);
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
  EMU_ENTER();
  if (ours(s) && s->capturing)
    return fail(cudaErrorStreamCaptureUnsupported);
  sync_stream(resolve(s));
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
  EMU_ENTER();
  sync_device();
  return cudaSuccess;
}

// Work queued on s from now on waits for the work e recorded (none if e was
// never recorded). A capture may not wait on work outside it.
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
                                unsigned int flags)
{
  EMU_ENTER();
  (void)flags;
  if (ours(s) && s->capturing)
    return e->sid ? fail(cudaErrorStreamCaptureIsolation) : cudaSuccess;
  std::lock_guard<std::recursive_mutex> g(qlock);
  CUstream_st *q = resolve(s);
  if (e->sid) // ordered after it, whether or not it has run by now
    order_after(q->after, e->after);
  if (e->sid && !reached(e->sid, e->pos)) {
    push(q, pending_op{nullptr, e->sid, e->pos});
    if (eager)
      run_to(q, q->enq);
  }
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m)
{
  EMU_ENTER();
  (void)m;
  if (!ours(s) || s->capturing)
    return fail(cudaErrorIllegalState);
  s->capturing = true;
  s->ops.clear();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
  EMU_ENTER();
  if (!ours(s) || !s->capturing)
    return fail(cudaErrorIllegalState);
  s->capturing = false;
  *g = new CUgraph_st();
  (*g)->ops.swap(s->ops);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g,
                                 unsigned long long flags)
{
  EMU_ENTER();
  (void)flags;
  *x = new CUgraphExec_st();
  (*x)->ops = g->ops;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
  EMU_ENTER();
  for (auto &op : x->ops)
    enqueue(s, op.fn, op.dir);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
  EMU_ENTER();
  delete x;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
  EMU_ENTER();
  delete g;
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
  EMU_ENTER();
  *e = new CUevent_st{0, 0, !(flags & cudaEventDisableTiming), {}, 0};
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
  EMU_ENTER();
  return cudaEventCreateWithFlags(e, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
  EMU_ENTER();
  delete e;
  return cudaSuccess;
}

// e now stands for the work queued on s so far. src/cuda/ records no event
// inside a capture; here that would be an error.
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
  EMU_ENTER();
  if (ours(s) && s->capturing)
    return fail(cudaErrorStreamCaptureUnsupported);
  std::lock_guard<std::recursive_mutex> g(qlock);
  CUstream_st *q = resolve(s);
  e->sid = q->id;
  e->pos = q->enq;
  e->after = q->after;
  e->seq = records++;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
  EMU_ENTER();
  std::lock_guard<std::recursive_mutex> g(qlock);
  if (e->sid) {
    unsigned long long lag = records - 1 - e->seq;
    sync_lag[lag < SYNC_LAGS ? lag : SYNC_LAGS - 1]++;
  }
  if (e->sid && !reached(e->sid, e->pos)) {
    note_host_wait(live[e->sid], e->pos);
    run_to(live[e->sid], e->pos);
  }
  return cudaSuccess;
}

// No clock: 0 ms between two events, once both have happened (the runtime
// says cudaErrorNotReady before), if both time (the runtime refuses an
// event created with cudaEventDisableTiming).
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
  EMU_ENTER();
  std::lock_guard<std::recursive_mutex> g(qlock);
  if (!a->sid || !b->sid || !a->timing || !b->timing)
    return fail(cudaErrorInvalidResourceHandle);
  if (!reached(a->sid, a->pos) || !reached(b->sid, b->pos))
    return fail(cudaErrorNotReady);
  *ms = 0.0f;
  return cudaSuccess;
}

// ---- cuFFT ------------------------------------------------------------------

namespace
{
struct fft_plan {
  int rank, n[2], batch; // rank 1: n[0]; rank 2: n[0] x n[1], row-major
  cufftType type;
  cudaStream_t stream;
  bool used; // executed (or captured) once: its kernels loaded
};
std::map<cufftHandle, fft_plan> plans;
cufftHandle next_plan = 1;
std::mutex fft_lock; // the plans

// FFTW's planner is one per process and not thread-safe: planned and
// destroyed under the CPU backend's planner lock (src/cpu/fft.c), as an
// engine's thread runs these while another thread may plan for the CPU
// (cf_engine_prepare_kernel, prepare_swap's plans for a fallback).
void run_fft(const fft_plan &p, void *in, void *out)
{
  int n[2] = {p.n[0], p.n[1]};
  int last = n[p.rank - 1];
  int real = p.rank == 1 ? n[0] : n[0] * n[1];
  int cplx = real / last * (last / 2 + 1);
  fftwf_plan f;
  cf_fft_planner_lock();
  if (p.type == CUFFT_R2C)
    f = fftwf_plan_many_dft_r2c(p.rank, n, p.batch, (float *)in, NULL, 1,
                                real, (fftwf_complex *)out, NULL, 1, cplx,
                                FFTW_ESTIMATE | FFTW_UNALIGNED);
  else // C2R: FFTW may overwrite its input, cuFFT may too
    f = fftwf_plan_many_dft_c2r(p.rank, n, p.batch, (fftwf_complex *)in, NULL,
                                1, cplx, (float *)out, NULL, 1, real,
                                FFTW_ESTIMATE | FFTW_UNALIGNED);
  cf_fft_planner_unlock();
  fftwf_execute(f);
  cf_fft_planner_lock();
  fftwf_destroy_plan(f);
  cf_fft_planner_unlock();
}
} // namespace

cufftResult cufftPlanMany(cufftHandle *plan, int rank, int *n, int *inembed,
                          int istride, int idist, int *onembed, int ostride,
                          int odist, cufftType type, int batch)
{
  EMU_ENTER();
  (void)istride, (void)idist, (void)ostride, (void)odist;
  if ((rank != 1 && rank != 2) || inembed || onembed ||
      (type != CUFFT_R2C && type != CUFFT_C2R))
    return CUFFT_NOT_IMPLEMENTED; // what src/cuda/ does not use
  if (fft_plans_fail)
    return CUFFT_ALLOC_FAILED;
  std::lock_guard<std::mutex> g(fft_lock);
  *plan = next_plan++;
  plans[*plan] =
      fft_plan{rank, {n[0], rank == 2 ? n[1] : 1}, batch, type, nullptr, false};
  return CUFFT_SUCCESS;
}

cufftResult cufftSetStream(cufftHandle plan, cudaStream_t s)
{
  EMU_ENTER();
  std::lock_guard<std::mutex> g(fft_lock);
  auto it = plans.find(plan);
  if (it == plans.end())
    return CUFFT_INVALID_PLAN;
  it->second.stream = s;
  return CUFFT_SUCCESS;
}

// Lazy loading: cuFFT's kernels, like ours, are loaded at a plan's first
// execution (or capture into a graph), which on a device may wait for
// the context and take milliseconds. Counted as a call of its own,
// FFT_FIRST_EXEC, which tests/gpu/steady.h forbids once a stream runs:
// an engine runs each plan once when it makes it.
#define FFT_FIRST_EXEC "cufftExec (a plan's first)"

static cufftResult exec(cufftHandle plan, cufftType type, void *in, void *out)
{
  fft_plan p;
  bool first;
  {
    std::lock_guard<std::mutex> g(fft_lock);
    auto it = plans.find(plan);
    if (it == plans.end() || it->second.type != type)
      return CUFFT_INVALID_PLAN;
    p = it->second;
    first = !it->second.used;
    it->second.used = true;
  }
  if (first)
    count_call(FFT_FIRST_EXEC);
  enqueue(p.stream, [=]() { run_fft(p, in, out); });
  return CUFFT_SUCCESS;
}

cufftResult cufftExecR2C(cufftHandle plan, cufftReal *in, cufftComplex *out)
{
  EMU_ENTER();
  return exec(plan, CUFFT_R2C, in, out);
}

cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *in, cufftReal *out)
{
  EMU_ENTER();
  return exec(plan, CUFFT_C2R, in, out);
}

cufftResult cufftDestroy(cufftHandle plan)
{
  EMU_ENTER();
  std::lock_guard<std::mutex> g(fft_lock);
  return plans.erase(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

} // extern "C"

// ---- contexts (ctx_emu.h) and the driver's entry points --------------------

namespace cf_emu
{
namespace
{
const int max_devices = 8;
// written once, before any thread can ask (primary_ctx only reads them)
context primaries[max_devices] = {{0, true}, {1, true}, {2, true},
                                  {3, true}, {4, true}, {5, true},
                                  {6, true}, {7, true}};
std::atomic<bool> active[max_devices];
} // namespace

int device_count()
{
  static const int n = [] {
    const char *e = getenv("CF_EMU_DEVICES");
    int v = e ? atoi(e) : 1;
    return v < 1 ? 1 : v > max_devices ? max_devices : v;
  }();
  return n;
}

ctx_stack_t &ctx_stack()
{
  thread_local ctx_stack_t st; // zero-initialised, never destroyed
  return st;
}

context *primary_ctx(int dev)
{
  active[dev] = true;
  return &primaries[dev];
}

bool primary_active(int dev)
{
  return dev >= 0 && dev < max_devices && active[dev];
}

driver_call::driver_call()
{
  driver_depth++;
}
driver_call::~driver_call()
{
  driver_depth--;
}
} // namespace cf_emu

// the emulated driver's (cuda_driver_emu.cc); only their addresses here
extern "C" {
int cuCtxGetCurrent(void);
int cuCtxSetCurrent(void);
int cuCtxCreate_v2(void);
int cuCtxDestroy_v2(void);
int cuCtxPushCurrent_v2(void);
int cuCtxPopCurrent_v2(void);
int cuDevicePrimaryCtxGetState(void);

// The driver functions the library and the tests look up (the ABI of CUDA
// 4.0's versions, which is what they ask for).
cudaError_t
cudaGetDriverEntryPointByVersion(const char *symbol, void **fn,
                                 unsigned int version, unsigned long long flags,
                                 enum cudaDriverEntryPointQueryResult *status)
{
  EMU_ENTER();
  (void)flags;
  static const struct {
    const char *name;
    int (*fn)(void);
  } table[] = {
      {"cuCtxGetCurrent", cuCtxGetCurrent},
      {"cuCtxSetCurrent", cuCtxSetCurrent},
      {"cuCtxCreate", cuCtxCreate_v2},
      {"cuCtxDestroy", cuCtxDestroy_v2},
      {"cuCtxPushCurrent", cuCtxPushCurrent_v2},
      {"cuCtxPopCurrent", cuCtxPopCurrent_v2},
      {"cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState},
  };
  *fn = nullptr;
  if (status)
    *status = cudaDriverEntryPointSymbolNotFound;
  if (!symbol)
    return fail(cudaErrorInvalidValue);
  for (const auto &t : table)
    if (!strcmp(symbol, t.name) && version >= 4000 &&
        // cuCtxCreate_v4 (12.5) takes other arguments
        (version < 12050 || strcmp(symbol, "cuCtxCreate"))) {
      *fn = (void *)t.fn;
      if (status)
        *status = cudaDriverEntryPointSuccess;
    }
  return cudaSuccess;
}
} // extern "C"
