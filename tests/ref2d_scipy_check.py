#!/usr/bin/python3
"""Check the test reference tests/ref2d.c against scipy (not run by CI).

Builds ref2d.c as a shared library and compares, on random cases,
  1. ref2d_convolve with scipy.ndimage.convolve(x, k, mode, cval, origin=0)
     for all five modes, odd and even kernel sizes, kernels larger than the
     frame, 1x1 / 1xN / Nx1 frames;
  2. ref2d_video_frame (unpacking of every pixel format, components,
     temporal taps with history and reset, scale / bias / absolute,
     rounding and saturation, alpha and padding) with a numpy model built
     on scipy.ndimage.convolve.

Needs numpy and scipy (Debian: /usr/bin/python3) and a C compiler ($CC or
cc); exits 77 (skipped) without them:
    /usr/bin/python3 tests/ref2d_scipy_check.py [cases]
meson runs it as the test 'ref2d-scipy' where /usr/bin/python3 exists.
"""
import ctypes as C
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from scipy import ndimage
except ImportError as exc:  # meson: exit 77 = skipped
    print(f"skipped: {exc}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODES = ["constant", "nearest", "reflect", "mirror", "wrap"]
FORMATS = ["GRAY8", "GRAY16_LE", "GRAY32F", "RGBA", "BGRA", "RGBx", "BGRx",
           "RGB", "BGR", "I420", "NV12"]


def build(d):
    cc = os.environ.get("CC") or shutil.which("cc")
    if not cc:
        print("skipped: no C compiler")
        sys.exit(77)
    so = os.path.join(d, "libref2d.so")
    subprocess.check_call([cc, "-O2", "-shared", "-fPIC", "-std=gnu11",
                           "-I", os.path.join(ROOT, "include"),
                           os.path.join(HERE, "ref2d.c"), "-o", so, "-lm"])
    lib = C.CDLL(so)
    dp = C.POINTER(C.c_double)
    lib.ref2d_convolve.argtypes = [dp, C.c_uint, C.c_uint, dp, C.c_uint,
                                   C.c_uint, C.c_int, C.c_double, dp, C.c_int]
    lib.ref2d_video_new.restype = C.c_void_p
    lib.ref2d_video_new.argtypes = [C.c_void_p, C.c_uint, C.c_uint, C.c_uint,
                                    C.POINTER(C.c_float)]
    lib.ref2d_video_frame.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p,
                                      C.c_void_p]
    lib.ref2d_video_reset.argtypes = [C.c_void_p]
    lib.ref2d_video_free.argtypes = [C.c_void_p]
    return lib


def ref_convolve(lib, x, k, mode, cval):
    h, w = x.shape
    kh, kw = k.shape
    x = np.ascontiguousarray(x, dtype=np.float64)
    k = np.ascontiguousarray(k, dtype=np.float64)
    y = np.empty_like(x)
    dp = C.POINTER(C.c_double)
    lib.ref2d_convolve(x.ctypes.data_as(dp), w, h, k.ctypes.data_as(dp), kh,
                       kw, MODES.index(mode), cval, y.ctypes.data_as(dp), 0)
    return y


def check_convolve(lib, rng, cases):
    worst = 0.0
    shapes = set()
    ratio = 0.0
    scipy_bug = 0
    for i in range(cases):
        kind = i % 6
        if kind == 0:
            h, w = 1, 1
        elif kind == 1:
            h, w = 1, int(rng.integers(1, 12))
        elif kind == 2:
            h, w = int(rng.integers(1, 12)), 1
        else:
            h, w = (int(v) for v in rng.integers(1, 14, 2))
        big = rng.random() < 0.4  # kernel larger than the frame
        huge = i % 10 == 9 and h < 5 and w < 5  # up to ~12x the axis
        kh = int(rng.integers(1, 12 * h + 4 if huge else 3 * h + 4 if big
                              else min(h, 6) + 1))
        kw = int(rng.integers(1, 12 * w + 4 if huge else 3 * w + 4 if big
                              else min(w, 6) + 1))
        ratio = max(ratio, kh / h, kw / w)
        shapes.add((kh % 2, kw % 2, kh > h or kw > w))
        x = rng.uniform(-1, 1, (h, w))
        k = rng.uniform(-1, 1, (kh, kw))
        for mode in MODES:
            cval = float(rng.uniform(-2, 2))
            want = ndimage.convolve(x, k, mode=mode, cval=cval, origin=0)
            got = ref_convolve(lib, x, k, mode, cval)
            err = np.max(np.abs(got - want))
            if err > 1e-12 and mode == "reflect" and max(kh / h, kw / w) > 8:
                # scipy 1.10.1 returns garbage for reflect once the kernel
                # is more than ~8x the axis: compare with scipy on the
                # input pre-extended by numpy's 'symmetric' (= reflect)
                pads = [(kh, kh), (kw, kw)]
                xp = np.pad(x, pads, mode="symmetric")
                want = ndimage.convolve(xp, k, mode=mode, cval=cval,
                                        origin=0)[kh:kh + h, kw:kw + w]
                err = np.max(np.abs(got - want))
                scipy_bug += 1
            worst = max(worst, err)
            if err > 1e-12:
                sys.exit(f"MISMATCH convolve {h}x{w} kernel {kh}x{kw} {mode} "
                         f"cval {cval}: max error {err}")
    print(f"convolve: {cases} cases x 5 modes, parities/larger-than-frame "
          f"combinations {sorted(shapes)}, kernel/frame ratio up to "
          f"{ratio:.1f}, max |ref - scipy| = {worst:.3g} (reflect with a "
          f"kernel > 8x the axis compared with pre-padded input {scipy_bug} "
          f"times: scipy 1.10.1 is wrong there)")


class Config(C.Structure):
    _fields_ = [("width", C.c_uint), ("height", C.c_uint), ("format", C.c_int),
                ("components", C.c_uint), ("border", C.c_int),
                ("cval", C.c_float), ("scale", C.c_float), ("bias", C.c_float),
                ("absolute", C.c_int), ("backend", C.c_int),
                ("device_id", C.c_int), ("algorithm", C.c_int),
                ("threads", C.c_uint), ("pipeline_depth", C.c_uint)]


class Frame(C.Structure):
    _fields_ = [("data", C.c_void_p * 3), ("stride", C.c_size_t * 3)]


# (planes: [(bpp, sub)], comps: [(plane, offset, step, sub)], extra, dtype)
def layout(fmt):
    u8 = np.uint8
    if fmt == "GRAY8":
        return [(1, 0)], [(0, 0, 1, 0)], None, u8
    if fmt == "GRAY16_LE":
        return [(2, 0)], [(0, 0, 2, 0)], None, np.dtype("<u2")
    if fmt == "GRAY32F":
        return [(4, 0)], [(0, 0, 4, 0)], None, np.float32
    if fmt in ("RGBA", "RGBx"):
        return [(4, 0)], [(0, 0, 4, 0), (0, 1, 4, 0), (0, 2, 4, 0)], \
            (0, 3, 4, 0), u8
    if fmt in ("BGRA", "BGRx"):
        return [(4, 0)], [(0, 2, 4, 0), (0, 1, 4, 0), (0, 0, 4, 0)], \
            (0, 3, 4, 0), u8
    if fmt == "RGB":
        return [(3, 0)], [(0, 0, 3, 0), (0, 1, 3, 0), (0, 2, 3, 0)], None, u8
    if fmt == "BGR":
        return [(3, 0)], [(0, 2, 3, 0), (0, 1, 3, 0), (0, 0, 3, 0)], None, u8
    if fmt == "I420":
        return [(1, 0), (1, 1), (1, 1)], \
            [(0, 0, 1, 0), (1, 0, 1, 1), (2, 0, 1, 1)], None, u8
    if fmt == "NV12":
        return [(1, 0), (2, 1)], [(0, 0, 1, 0), (1, 0, 2, 1), (1, 1, 2, 1)], \
            None, u8
    raise ValueError(fmt)


def check_video(lib, rng, cases):
    counts = {}
    for case in range(cases):
        fmt = FORMATS[case % len(FORMATS)]
        planes, comps, extra, dt = layout(fmt)
        dt = np.dtype(dt)
        w, h = (int(v) for v in rng.integers(1, 9, 2))
        mode = MODES[int(rng.integers(0, 5))]
        T = int(rng.integers(1, 4))
        kh, kw = (int(v) for v in rng.integers(1, 7, 2))
        taps = rng.uniform(-1, 1, (T, kh, kw)).astype(np.float32)
        isf = dt == np.float32
        maxv = 255 if dt == np.uint8 else 65535
        cfg = Config(width=w, height=h, format=FORMATS.index(fmt),
                     components=int(rng.integers(1, 8)) if len(comps) > 1
                     else 1, border=MODES.index(mode),
                     cval=float(rng.uniform(-1, 1)) if isf
                     else float(rng.uniform(0, maxv)),
                     scale=float(rng.uniform(-3, 3)),
                     bias=float(rng.uniform(-1, 1) if isf
                                else rng.uniform(-maxv, maxv)),
                     absolute=int(rng.integers(0, 2)), pipeline_depth=2)
        if case % 7 == 0 and not isf:  # exact ties: nearest-even
            T, kh, kw = 1, 1, 1
            taps = np.ones((1, 1, 1), np.float32)
            cfg.scale, cfg.absolute = 1.0, 0
            cfg.bias = float(rng.integers(-3, 3)) + 0.5
        v = lib.ref2d_video_new(C.byref(cfg), T, kh, kw,
                                taps.ctypes.data_as(C.POINTER(C.c_float)))
        psize = [((w + 1) // 2 if s else w, (h + 1) // 2 if s else h)
                 for _, s in planes]
        strides = [pw * bpp + int(rng.integers(0, 3)) * dt.itemsize
                   for (bpp, _), (pw, _) in zip(planes, psize)]
        hist = []
        nframes = int(rng.integers(1, 6))
        reset_at = int(rng.integers(0, nframes + 1))
        for t in range(nframes):
            if t == reset_at and t > 0:
                lib.ref2d_video_reset(v)
                hist = []
            bufs_in = [rng.integers(0, 256, s * ph, dtype=np.uint8)
                       for s, (_, ph) in zip(strides, psize)]
            if isf:
                for b in bufs_in:
                    b.view(np.float32)[:] = rng.uniform(-2, 2, b.size // 4)
            fill = [rng.integers(0, 256, b.size, dtype=np.uint8)
                    for b in bufs_in]
            bufs_out = [f.copy() for f in fill]
            fin, fout = Frame(), Frame()
            for p in range(len(planes)):
                fin.data[p] = bufs_in[p].ctypes.data
                fin.stride[p] = strides[p]
                fout.data[p] = bufs_out[p].ctypes.data
                fout.stride[p] = strides[p]
            lib.ref2d_video_frame(v, C.byref(fin), C.byref(fout), None)
            # the model: numpy over strided views
            want = [f.copy() for f in fill]

            def view(bufs, ch):
                p, off, step, sub = ch
                pw, ph = psize[p]
                b = bufs[p].reshape(ph, strides[p])
                cols = off + step * np.arange(pw)
                idx = cols[:, None] + np.arange(dt.itemsize)[None, :]
                return b[:, idx]  # ph x pw x itemsize bytes

            def samples(bufs, ch):
                raw = np.ascontiguousarray(view(bufs, ch))
                return raw.view(dt)[..., 0].astype(np.float64)

            cur = [samples(bufs_in, ch) for ch in comps]
            for c, ch in enumerate(comps):
                p, off, step, sub = ch
                pw, ph = psize[p]
                b = want[p].reshape(ph, strides[p])
                cols = off + step * np.arange(pw)
                idx = cols[:, None] + np.arange(dt.itemsize)[None, :]
                if not cfg.components & (1 << c):
                    b[:, idx] = view(bufs_in, ch)
                    continue
                acc = ndimage.convolve(cur[c], taps[0].astype(np.float64),
                                       mode=mode, cval=float(cfg.cval))
                for tau in range(1, T):
                    if tau - 1 < len(hist):
                        acc += ndimage.convolve(hist[tau - 1][c],
                                                taps[tau].astype(np.float64),
                                                mode=mode,
                                                cval=float(cfg.cval))
                s = float(cfg.scale) * acc + float(cfg.bias)
                if cfg.absolute:
                    s = np.abs(s)
                if isf:
                    q = s.astype(np.float32)
                else:
                    q = np.clip(np.rint(s), 0, maxv).astype(dt)
                b[:, idx] = np.ascontiguousarray(q).view(np.uint8).reshape(
                    ph, pw, dt.itemsize)
            if extra:
                p = extra[0]
                pw, ph = psize[p]
                b = want[p].reshape(ph, strides[p])
                cols = extra[1] + extra[2] * np.arange(pw)
                b[:, cols] = view(bufs_in, extra)[..., 0]
            hist = ([cur] + hist)[:T - 1]
            for p in range(len(planes)):
                if not np.array_equal(want[p], bufs_out[p]):
                    bad = np.nonzero(want[p] != bufs_out[p])[0]
                    sys.exit(f"MISMATCH video {fmt} {w}x{h} {mode} T {T} "
                             f"k {kh}x{kw} frame {t} plane {p} bytes "
                             f"{bad[:10]}")
        lib.ref2d_video_free(v)
        counts[fmt] = counts.get(fmt, 0) + 1
    print(f"video frames: {cases} cases (formats {counts}), byte-exact")


def main():
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    rng = np.random.default_rng(12345)
    with tempfile.TemporaryDirectory() as d:
        lib = build(d)
        check_convolve(lib, rng, cases)
        check_video(lib, rng, cases)
    print("ref2d agrees with scipy.ndimage.convolve")


if __name__ == "__main__":
    main()
