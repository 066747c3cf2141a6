#!/usr/bin/env python3
"""GPU peers for bench/gpu-check: the same cases as bench_gpu_video and
bench_gpu_audio, run through whatever of CuPy, PyTorch and Numba is installed.

    python3 bench/gpu_peers.py [--quick] [--reps N] [--budget S]
        [--peers cupy,torch,numba] [--cases NAME,..] [--seed N]

Cases (names shared with the bench programs, bench/README.md "GPU check"):
  conv2d-13x13-1080p, conv2d-13x13-2160p
      2D convolution, one float32 plane 1920x1080 / 3840x2160, random 13x13
      kernel, data resident on the device (kernel time only);
      rate: GFLOP/s = 2 * 169 * pixels / time.
  fir16-16M, fir32-16M, fir64-16M
      1D convolution of 2^24 float32 samples (one channel) with 16/32/64
      random taps, data resident; rate: GB/s = (input + output bytes) / time.
  fir131072-48k-stereo-1s
      1 s of 48 kHz stereo float32 through a 131072-tap kernel (the same
      kernel per channel; full convolution, 48000 + 131071 outputs per
      channel); rate: direct-equivalent GFLOP/s = 2 * taps * outputs / time.

Peers:
  cupy   cupyx.scipy.ndimage.convolve (2D, mode reflect),
         cupyx.scipy.signal.oaconvolve and fftconvolve (1D, mode full),
         cupyx.scipy.ndimage.convolve1d (1D direct, short kernels only)
  torch  torch.nn.functional.conv2d / conv1d through cuDNN, float32 with
         TF32 off (conv2d also with TF32 on, labelled); per-channel 1D as a
         depthwise convolution (groups = channels); the kernel is flipped
         (PyTorch correlates)
  numba  a straightforward one-thread-per-output CUDA kernel for 2D 13x13
         (global-memory kernel and image, clamped borders): the usual first
         attempt

Each (peer, case) runs warm-up calls, then --reps calls each timed by CUDA
events of that library; the median is reported. Outputs are checked at 256
random interior points against a float64 reference computed with numpy
(relative max error; 'WRONG' above 1e-3). A peer that cannot be imported
prints "peer X: not installed" and is skipped; a failing case prints its
error in the row. The exit status is 0 whatever the peers do (2 on bad
arguments). Output: a markdown table (rows printed as they finish), then one
`RESULT peer=<peer> case=<case> ms=<median>` line per timed row.
"""
import argparse
import importlib.util
import math
import statistics
import sys
import time
import traceback
import warnings

CASES_2D = {
    "conv2d-13x13-1080p": (1920, 1080),
    "conv2d-13x13-2160p": (3840, 2160),
}
CASES_FIR = {
    "fir16-16M": 16,
    "fir32-16M": 32,
    "fir64-16M": 64,
}
LONG_CASE = "fir131072-48k-stereo-1s"
LONG_TAPS, LONG_FRAMES, LONG_CH = 131072, 48000, 2
FIR_N = 1 << 24
K2D = 13
ALL_CASES = list(CASES_2D) + list(CASES_FIR) + [LONG_CASE]

results = []  # (peer, case, ms)
notes = []    # lines printed after the table (a table must not be cut)


def note(msg):
    notes.append(msg)


def row(peer, case, ms=None, rate="", check="", msg=""):
    if ms is None:
        print(f"| {peer} | {case} | - | {msg} | |", flush=True)
        return
    print(f"| {peer} | {case} | {ms:.4f} | {rate} | {check} |", flush=True)
    results.append((peer, case, ms))


def rate_of(case, ms):
    s = ms * 1e-3
    if case in CASES_2D:
        w, h = CASES_2D[case]
        return f"{2.0 * K2D * K2D * w * h / s / 1e9:.1f} GFLOP/s"
    if case in CASES_FIR:
        k = CASES_FIR[case]
        return f"{4.0 * (FIR_N + FIR_N + k - 1) / s / 1e9:.1f} GB/s"
    nout = LONG_FRAMES + LONG_TAPS - 1
    return (f"{2.0 * LONG_TAPS * nout * LONG_CH / s / 1e9:.1f} GFLOP/s "
            "(direct-equiv.)")


# ---------------------------------------------------------------- data ----

class Data:
    """Host inputs (numpy float32, random, non-zero) and float64 checks."""

    def __init__(self, np, seed):
        self.np = np
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.img = {c: rng.uniform(0.1, 1.0, (h, w)).astype(np.float32)
                    for c, (w, h) in CASES_2D.items()}
        self.k2d = rng.uniform(-1.0, 1.0, (K2D, K2D)).astype(np.float32)
        self.sig = rng.uniform(-1.0, 1.0, FIR_N).astype(np.float32)
        self.taps = {c: rng.uniform(-1.0, 1.0, k).astype(np.float32)
                     for c, k in CASES_FIR.items()}
        self.stereo = rng.uniform(-1.0, 1.0,
                                  (LONG_CH, LONG_FRAMES)).astype(np.float32)
        decay = np.exp(-np.arange(LONG_TAPS) / 8000.0)
        self.long_taps = (rng.standard_normal(LONG_TAPS) * decay).astype(
            np.float32)

    def check2d(self, case, out, lag=(K2D // 2, K2D // 2)):
        """out[i, j] == sum h[a, b] x[i + lag0 - a, j + lag1 - b] inside."""
        np = self.np
        x = self.img[case].astype(np.float64)
        h = self.k2d.astype(np.float64)
        hh, ww = x.shape
        ii = self.rng.integers(K2D, hh - K2D, 256)
        jj = self.rng.integers(K2D, ww - K2D, 256)
        worst = scale = 0.0
        for i, j in zip(ii, jj):
            i0, j0 = i + lag[0], j + lag[1]
            patch = x[i0 - K2D + 1:i0 + 1, j0 - K2D + 1:j0 + 1][::-1, ::-1]
            ref = float((patch * h).sum())
            scale = max(scale, abs(ref))
            worst = max(worst, abs(float(out[i, j]) - ref))
        worst /= max(scale, 1e-30)
        return worst

    def check1d(self, x, taps, out, lags):
        """Best over candidate lags of max rel. error at interior points,
        where out[n] == sum_k taps[k] x[n + lag - k]."""
        np = self.np
        k = len(taps)
        h = taps.astype(np.float64)
        nn = self.rng.integers(k + 4, len(x) - k - 4, 256)
        best = math.inf
        for lag in lags:
            worst = 0.0
            scale = 0.0
            for n in nn:
                seg = x[n + lag - k + 1:n + lag + 1].astype(np.float64)[::-1]
                ref = float((seg * h).sum())
                scale = max(scale, abs(ref))
                worst = max(worst, abs(float(out[n]) - ref))
            best = min(best, worst / max(scale, 1e-30))
        return best

    def check_full(self, x, taps, out):
        """Full convolution (zeros outside x), out[n] == sum_k taps[k]
        x[n - k] for n in [0, len(x) + len(taps) - 1): max rel. error at 256
        random points, relative to the largest reference value."""
        np = self.np
        x64 = x.astype(np.float64)
        h64 = taps.astype(np.float64)
        nx, nh = len(x), len(taps)
        worst = scale = 0.0
        for n in self.rng.integers(0, nx + nh - 1, 256):
            lo, hi = max(0, n - nx + 1), min(nh - 1, n)
            ref = float(np.dot(h64[lo:hi + 1], x64[n - hi:n - lo + 1][::-1]))
            scale = max(scale, abs(ref))
            worst = max(worst, abs(float(out[n]) - ref))
        return worst / max(scale, 1e-30)


def fmt_check(err):
    if err is None:
        return ""
    if not math.isfinite(err) or err > 1e-3:
        return f"WRONG (rel. err {err:.1e})"
    return f"rel. err {err:.1e}"


# -------------------------------------------------------------- timing ----

def time_it(fn, new_event, elapsed_ms, sync, reps, warmup=3):
    """Median of `reps` calls, each between two events of the library."""
    for _ in range(warmup):
        fn()
    sync()
    ts = []
    for _ in range(reps):
        a, b = new_event(), new_event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(elapsed_ms(a, b))
    return statistics.median(ts)


class Budget:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()


def run_case(peer, case, budget, body):
    if budget.left() <= 0:
        row(peer, case, msg="skipped: peers' time budget spent")
        return
    try:
        body()
    except Exception as e:  # a peer's failure never stops the run
        msg = f"{type(e).__name__}: {e}".replace("|", "/").replace("\n", " ")
        row(peer, case, msg=f"error: {msg[:160]}")
        traceback.print_exc(file=sys.stderr)


# ---------------------------------------------------------------- cupy ----

def peer_cupy(d, cases, reps, budget):
    try:
        import cupy as cp
        import cupyx.scipy.ndimage as cndi
        import cupyx.scipy.signal as csig
    except Exception as e:
        note(f"peer cupy: not installed ({type(e).__name__}: {e})")
        return
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        note(f"peer cupy: no CUDA device ({e})")
        return

    def t(fn):
        return time_it(fn, cp.cuda.Event, cp.cuda.get_elapsed_time,
                       cp.cuda.Device().synchronize, reps)

    for case in cases:
        if case in CASES_2D:
            def body(case=case):
                x = cp.asarray(d.img[case])
                k = cp.asarray(d.k2d)
                out = cp.empty_like(x)
                ms = t(lambda: cndi.convolve(x, k, output=out,
                                             mode="reflect"))
                row("cupy ndimage.convolve", case, ms, rate_of(case, ms),
                    fmt_check(d.check2d(case, cp.asnumpy(out))))
            run_case("cupy ndimage.convolve", case, budget, body)
        elif case in CASES_FIR:
            k = CASES_FIR[case]
            x = cp.asarray(d.sig)
            h = cp.asarray(d.taps[case])
            for name, fn in (("oaconvolve", csig.oaconvolve),
                             ("fftconvolve", csig.fftconvolve)):
                def body(fn=fn, name=name, case=case):
                    holder = {}

                    def go():
                        holder["y"] = fn(x, h, mode="full")
                    ms = t(go)
                    y = cp.asnumpy(holder["y"])
                    row(f"cupy {name}", case, ms, rate_of(case, ms),
                        fmt_check(d.check1d(d.sig, d.taps[case], y, [0])))
                run_case(f"cupy {name}", case, budget, body)

            def body(case=case, k=k):
                out = cp.empty_like(x)
                ms = t(lambda: cndi.convolve1d(x, h, output=out,
                                               mode="reflect"))
                y = cp.asnumpy(out)
                lags = range(k // 2 - 2, k // 2 + 3)
                row("cupy ndimage.convolve1d", case, ms, rate_of(case, ms),
                    fmt_check(d.check1d(d.sig, d.taps[case], y, lags)))
            run_case("cupy ndimage.convolve1d", case, budget, body)
            del x, h
        elif case == LONG_CASE:
            x = cp.asarray(d.stereo)
            h = cp.asarray(d.long_taps)[None, :]
            for name, fn in (("oaconvolve", csig.oaconvolve),
                             ("fftconvolve", csig.fftconvolve)):
                def body(fn=fn, name=name):
                    holder = {}

                    def go():
                        holder["y"] = fn(x, h, mode="full", axes=-1)
                    ms = t(go)
                    y = cp.asnumpy(holder["y"])
                    err = max(d.check_full(d.stereo[c], d.long_taps, y[c])
                              for c in range(LONG_CH))
                    row(f"cupy {name}", LONG_CASE, ms,
                        rate_of(LONG_CASE, ms), fmt_check(err))
                run_case(f"cupy {name}", LONG_CASE, budget, body)
            del x, h
        cp.get_default_memory_pool().free_all_blocks()


# --------------------------------------------------------------- torch ----

def peer_torch(d, cases, reps, budget):
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:
        note(f"peer torch: not installed ({type(e).__name__}: {e})")
        return
    if not torch.cuda.is_available():
        note("peer torch: no CUDA device (torch.cuda.is_available() is "
              "False)")
        return
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    note(f"peer torch: {torch.__version__}, cuDNN "
          f"{torch.backends.cudnn.version()}")

    def t(fn):
        return time_it(fn, lambda: torch.cuda.Event(enable_timing=True),
                       lambda a, b: a.elapsed_time(b), torch.cuda.synchronize,
                       reps)

    def flipped(a, dims):
        return torch.flip(torch.from_numpy(a), dims).contiguous().to(dev)

    with torch.no_grad():
        for case in cases:
            if case in CASES_2D:
                x = torch.from_numpy(d.img[case]).to(dev)[None, None]
                w = flipped(d.k2d, (0, 1))[None, None]
                for tf32 in (False, True):
                    label = "torch conv2d" + (" tf32" if tf32 else "")

                    def body(case=case, tf32=tf32, label=label):
                        torch.backends.cudnn.allow_tf32 = tf32
                        holder = {}

                        def go():
                            holder["y"] = F.conv2d(x, w, padding=K2D // 2)
                        ms = t(go)
                        y = holder["y"][0, 0].cpu().numpy()
                        row(label, case, ms, rate_of(case, ms),
                            fmt_check(d.check2d(case, y)))
                    run_case(label, case, budget, body)
                torch.backends.cudnn.allow_tf32 = False
                del x, w
            elif case in CASES_FIR:
                k = CASES_FIR[case]
                x = torch.from_numpy(d.sig).to(dev)[None, None]
                w = flipped(d.taps[case], (0,))[None, None]

                def body(case=case, k=k):
                    torch.backends.cudnn.allow_tf32 = False
                    holder = {}

                    def go():
                        holder["y"] = F.conv1d(x, w, padding=k - 1)
                    ms = t(go)
                    y = holder["y"][0, 0].cpu().numpy()
                    row("torch conv1d", case, ms, rate_of(case, ms),
                        fmt_check(d.check1d(d.sig, d.taps[case], y, [0])))
                run_case("torch conv1d", case, budget, body)
                del x, w
            elif case == LONG_CASE:
                # Depthwise: one group per channel, the same taps in each.
                x = torch.from_numpy(d.stereo).to(dev)[None]
                w1 = flipped(d.long_taps, (0,))
                w = w1[None, None].repeat(LONG_CH, 1, 1).contiguous()

                def body():
                    torch.backends.cudnn.allow_tf32 = False
                    # cudnn.benchmark would try every algorithm on a
                    # 131072-tap kernel (slow, large workspaces): heuristics.
                    torch.backends.cudnn.benchmark = False
                    holder = {}

                    def go():
                        holder["y"] = F.conv1d(x, w, padding=LONG_TAPS - 1,
                                               groups=LONG_CH)
                    t0 = time.monotonic()
                    go()
                    torch.cuda.synchronize()
                    once = time.monotonic() - t0
                    n = reps if once < 0.5 else max(1, min(reps, 3))
                    ms = time_it(go,
                                 lambda: torch.cuda.Event(enable_timing=True),
                                 lambda a, b: a.elapsed_time(b),
                                 torch.cuda.synchronize, n, warmup=1)
                    y = holder["y"][0].cpu().numpy()
                    err = max(d.check_full(d.stereo[c], d.long_taps, y[c])
                              for c in range(LONG_CH))
                    row("torch conv1d depthwise", LONG_CASE, ms,
                        rate_of(LONG_CASE, ms), fmt_check(err))
                    torch.backends.cudnn.benchmark = True
                run_case("torch conv1d depthwise", LONG_CASE, budget, body)
                del x, w
            torch.cuda.empty_cache()


# --------------------------------------------------------------- numba ----

def peer_numba(d, cases, reps, budget):
    try:
        # numba-cuda 0.30 still registers np.row_stack, which numpy 2.4
        # removed (seen on the H200 image, numpy 2.5.2): the same function
        import numpy
        if not hasattr(numpy, "row_stack"):
            numpy.row_stack = numpy.vstack
        from numba import cuda
        import numba
    except Exception as e:
        note(f"peer numba: not installed ({type(e).__name__}: {e})")
        return
    try:
        if not cuda.is_available():
            note("peer numba: no CUDA device (numba.cuda.is_available() is "
                  "False)")
            return
    except Exception as e:
        note(f"peer numba: no CUDA device ({e})")
        return
    note(f"peer numba: {numba.__version__}")
    cases2d = [c for c in cases if c in CASES_2D]
    if not cases2d:
        return
    warnings.simplefilter("ignore")

    @cuda.jit
    def conv2d_naive(img, k, out):
        # One thread per output pixel, everything from global memory,
        # borders clamped: the usual first attempt.
        x, y = cuda.grid(2)
        hh, ww = img.shape
        if x >= ww or y >= hh:
            return
        kh, kw = k.shape
        ry, rx = kh // 2, kw // 2
        acc = numba.float32(0.0)
        for a in range(kh):
            yy = min(max(y + ry - a, 0), hh - 1)
            for b in range(kw):
                xx = min(max(x + rx - b, 0), ww - 1)
                acc += k[a, b] * img[yy, xx]
        out[y, x] = acc

    def t(fn):
        return time_it(fn, lambda: cuda.event(timing=True),
                       cuda.event_elapsed_time, cuda.synchronize, reps)

    for case in cases2d:
        def body(case=case):
            x = cuda.to_device(d.img[case])
            k = cuda.to_device(d.k2d)
            out = cuda.device_array_like(x)
            hh, ww = d.img[case].shape
            block = (16, 16)
            grid = ((ww + 15) // 16, (hh + 15) // 16)
            ms = t(lambda: conv2d_naive[grid, block](x, k, out))
            row("numba naive 1 thread/output", case, ms, rate_of(case, ms),
                fmt_check(d.check2d(case, out.copy_to_host())))
        run_case("numba naive 1 thread/output", case, budget, body)


# ---------------------------------------------------------------- main ----

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="5 repetitions, 1080p and fir64 and the long case")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--budget", type=float, default=150.0,
                    help="seconds; cases not started by then are skipped")
    ap.add_argument("--peers", default="cupy,torch,numba")
    ap.add_argument("--cases", default=None,
                    help="comma-separated case names (default: all)")
    ap.add_argument("--seed", type=int, default=20261122)
    a = ap.parse_args()
    reps = a.reps or (5 if a.quick else 20)
    if a.cases:
        cases = a.cases.split(",")
        bad = [c for c in cases if c not in ALL_CASES]
        if bad:
            ap.error(f"unknown case(s) {bad}; known: {ALL_CASES}")
    elif a.quick:
        cases = ["conv2d-13x13-1080p", "fir64-16M", LONG_CASE]
    else:
        cases = ALL_CASES
    budget = Budget(a.budget)

    print(f"gpu_peers: python {sys.version.split()[0]}, {reps} timed "
          f"repetitions after warm-up, median; cases: {', '.join(cases)}",
          flush=True)
    try:
        import numpy as np
    except Exception as e:
        print(f"peers: numpy not installed ({e}); every peer needs it: "
              "skipped", flush=True)
        return 0
    t0 = time.monotonic()
    d = Data(np, a.seed)
    print(f"inputs made in {time.monotonic() - t0:.1f} s (numpy "
          f"{np.__version__})", flush=True)
    peers = {"cupy": peer_cupy, "torch": peer_torch, "numba": peer_numba}
    todo = []
    for p in a.peers.split(","):
        if p not in peers:
            print(f"peer {p}: unknown (known: {', '.join(peers)})")
        elif importlib.util.find_spec(p) is None:
            print(f"peer {p}: not installed", flush=True)
        else:
            todo.append(p)
    if not todo:
        print("no peer installed: nothing to time")
        return 0
    print()
    print("| peer | case | ms (median) | GB/s or GFLOP/s | check |")
    print("| --- | --- | ---: | ---: | --- |", flush=True)
    for p in todo:
        try:
            peers[p](d, cases, reps, budget)
        except Exception as e:
            note(f"peer {p}: failed: {type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stderr)
    print()
    for n in notes:
        print(n)
    if notes:
        print()
    for peer, case, ms in results:
        print(f"RESULT peer={peer.replace(' ', '-')} case={case} ms={ms:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
