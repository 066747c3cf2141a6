#!/usr/bin/python3
"""Acceptance check of `cudafilter conv2d` against scipy.ndimage.convolve.

Random cases: every pixel format, every border mode, odd and even kernel
sizes (some larger than the frame), temporal 3D kernels (several frames,
so the kept state matters), every preset, scale / bias / absolute,
component selections, kernels written as .npy (float32/float64, either
byte order, C or Fortran order) and as text. Random frames go through the
CLI in irregular pieces; the output is compared with scipy in float64:

  float formats:   relative L2 error per component <= 2e-5, relative to
                   the output or, where the taps cancel, to 1/100 of
                   the magnitudes summed (the same filter on |x| with
                   |k|): float32 rounds those, not their sum
  integer formats: max |got - round_half_even(clip(ref))| <= 1 code value
  components not selected, and alpha / X bytes: identical to the input

Run it with Debian's python, which has numpy and scipy:

  CF_CLI=build/src/cudafilter /usr/bin/python3 tests/conv2d_scipy.py \
      [--cases N] [--seed S] [--cli PATH] [--keep DIR] [-v]

It prints the seed (replay with --seed or CF_TEST_SEED) and exits 77
(meson's "skipped") when numpy or scipy is missing.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

try:
    import numpy as np
    import scipy.ndimage as ndi
except ImportError as exc:  # pragma: no cover - depends on the machine
    print(f"conv2d-scipy: skipped, needs numpy and scipy ({exc}); run it "
          "with /usr/bin/python3 or install python3-numpy python3-scipy")
    sys.exit(77)

# ---- pixel formats, described independently of the library --------------

U8, U16, F32 = "u8", "u16", "f32"


class Fmt:
    def __init__(self, name, sample, layout, bpp=1, offs=(0,), alpha=None):
        self.name, self.sample, self.layout = name, sample, layout
        self.bpp, self.offs, self.alpha = bpp, offs, alpha
        self.ncomp = 1 if layout == "packed" and len(offs) == 1 else 3

    def family(self):
        if self.ncomp == 1:
            return "gray"
        return "yuv" if self.layout in ("i420", "nv12") else "rgb"

    def frame_bytes(self, w, h):
        cw, ch = (w + 1) // 2, (h + 1) // 2
        if self.layout == "packed":
            return w * h * self.bpp
        return w * h + 2 * cw * ch

    def max_value(self):
        return {U8: 255.0, U16: 65535.0, F32: None}[self.sample]

    def planes(self, buf, w, h):
        """Component arrays (views, float64 copies not made) of one frame."""
        cw, ch = (w + 1) // 2, (h + 1) // 2
        if self.layout == "packed":
            if self.sample == U16:
                return [np.frombuffer(buf, "<u2").reshape(h, w)]
            if self.sample == F32:
                return [np.frombuffer(buf, "=f4").reshape(h, w)]
            a = np.frombuffer(buf, np.uint8).reshape(h, w, self.bpp)
            return [a[:, :, o] for o in self.offs]
        y = np.frombuffer(buf, np.uint8, w * h).reshape(h, w)
        rest = np.frombuffer(buf, np.uint8, offset=w * h)
        if self.layout == "i420":
            return [y, rest[:cw * ch].reshape(ch, cw),
                    rest[cw * ch:].reshape(ch, cw)]
        uv = rest.reshape(ch, cw, 2)
        return [y, uv[:, :, 0], uv[:, :, 1]]

    def alpha_bytes(self, buf, w, h):
        if self.alpha is None:
            return None
        a = np.frombuffer(buf, np.uint8).reshape(h, w, self.bpp)
        return a[:, :, self.alpha]


FORMATS = [
    Fmt("GRAY8", U8, "packed", 1, (0,)),
    Fmt("GRAY16_LE", U16, "packed", 2, (0,)),
    Fmt("GRAY32F", F32, "packed", 4, (0,)),
    Fmt("RGBA", U8, "packed", 4, (0, 1, 2), 3),
    Fmt("BGRA", U8, "packed", 4, (2, 1, 0), 3),
    Fmt("RGBx", U8, "packed", 4, (0, 1, 2), 3),
    Fmt("BGRx", U8, "packed", 4, (2, 1, 0), 3),
    Fmt("RGB", U8, "packed", 3, (0, 1, 2)),
    Fmt("BGR", U8, "packed", 3, (2, 1, 0)),
    Fmt("I420", U8, "i420"),
    Fmt("NV12", U8, "nv12"),
]

BORDERS = ["reflect", "mirror", "nearest", "wrap", "constant"]

# ---- presets, as kernel2d.h defines them ----------------------------------


def gaussian(n, sigma):
    if not sigma:
        sigma = 0.3 * ((n - 1) / 2 - 1) + 0.8
    c = (n - 1) / 2
    i = np.arange(n, dtype=np.float64)
    g = np.exp(-((i - c) ** 2) / (2 * sigma * sigma))
    g /= g.sum()
    return np.outer(g, g)


def preset_kernel(name, size, sigma):
    if name == "gaussian":
        return gaussian(size or 5, sigma)
    if name == "box":
        n = size or 3
        return np.full((n, n), 1.0 / (n * n))
    if name == "unsharp":
        n = size or 5
        d = np.zeros((n, n))
        d[n // 2, n // 2] = 1.0
        return 2 * d - gaussian(n, sigma)
    fixed = {
        "sharpen": [[0, -1, 0], [-1, 5, -1], [0, -1, 0]],
        "sobel-x": [[1, 0, -1], [2, 0, -2], [1, 0, -1]],
        "sobel-y": [[1, 2, 1], [0, 0, 0], [-1, -2, -1]],
        "laplacian": [[0, 1, 0], [1, -4, 1], [0, 1, 0]],
        "emboss": [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]],
    }
    return np.array(fixed[name], dtype=np.float64)


PRESETS = ["gaussian", "box", "sharpen", "unsharp", "sobel-x", "sobel-y",
           "laplacian", "emboss"]

# ---- the reference ---------------------------------------------------------

SCIPY_WORKAROUNDS = [0]


def sp_convolve(x, k, mode, cval):
    """scipy.ndimage.convolve(x, k, mode=mode, cval=cval), float64.

    scipy 1.10.1 (Debian 12) computes mode='reflect' wrongly once the
    kernel is more than about 8 times the axis (1D: N = 2 from K = 17, N = 3
    from K = 25, ...; it returns garbage such as 1e249). There the axis is
    first extended with numpy's 'symmetric' padding (scipy's 'reflect',
    repeated) by the kernel's size, so scipy never needs to look that far
    beyond its input, and the result is cropped back."""
    pads = [(kd, kd) if mode == "reflect" and kd > 4 * n else (0, 0)
            for n, kd in zip(x.shape, k.shape)]
    if not any(p[0] for p in pads):
        return ndi.convolve(x, k, mode=mode, cval=cval)
    SCIPY_WORKAROUNDS[0] += 1
    y = ndi.convolve(np.pad(x, pads, mode="symmetric"), k, mode=mode,
                     cval=cval)
    return y[tuple(slice(p[0], p[0] + n) for p, n in zip(pads, x.shape))]


# ---- kernel files --------------------------------------------------------


def write_text(path, k, rng):
    """One row per line, mixed separators, comments, blank line between
    temporal taps."""
    with open(path, "w") as f:
        f.write(f"# {k.shape[0]} x {k.shape[1]} x {k.shape[2]} kernel\n")
        for tau in range(k.shape[0]):
            if tau:
                f.write("\n")
            for row in k[tau]:
                sep = rng.choice([" ", ", ", ",", "\t", "  "])
                f.write(sep.join(repr(float(v)) for v in row))
                if rng.random() < 0.2:
                    f.write("  # a comment")
                f.write("\n")


def write_npy(path, k, rng):
    a = k[0] if k.shape[0] == 1 and rng.random() < 0.7 else k
    dt = rng.choice(["<f4", ">f4", "<f8", ">f8"])
    a = a.astype(dt)
    if rng.random() < 0.3:
        a = np.asfortranarray(a)
    np.save(path, a)
    return dt + (" F" if a.flags.f_contiguous and a.ndim > 1
                 and not a.flags.c_contiguous else "")


# ---- running the CLI -----------------------------------------------------


def feed(proc, data, rng, frame_bytes, errs):
    """Write data to the CLI's stdin in irregular pieces, pausing now and
    then, never a whole number of frames at once."""
    try:
        pos = 0
        while pos < len(data):
            kind = rng.randrange(4)
            if kind == 0:
                n = rng.randint(1, 7)
            elif kind == 1:
                n = rng.randint(1, 3 * frame_bytes + 5)
            elif kind == 2:
                n = rng.randint(8, 6000)
            else:
                n = rng.randint(6000, 40000)
            if frame_bytes > 1 and n % frame_bytes == 0:
                n += 1
            chunk = data[pos:pos + n]
            view = memoryview(chunk)
            while len(view):
                w = os.write(proc.stdin.fileno(), view)
                view = view[w:]
            pos += len(chunk)
            if rng.random() < 0.12:
                time.sleep(rng.uniform(0.001, 0.004))
    except BrokenPipeError:
        pass
    except OSError as exc:  # pragma: no cover
        errs.append(exc)
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass


def run_cli(cli, args, data, rng, frame_bytes):
    proc = subprocess.Popen([cli, "conv2d"] + args, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            bufsize=0)
    errs = []
    err_chunks = []
    feeder = threading.Thread(
        target=feed, args=(proc, data, random.Random(rng.random()),
                           frame_bytes, errs))
    errer = threading.Thread(
        target=lambda: err_chunks.append(proc.stderr.read()))
    feeder.start()
    errer.start()
    out = bytearray()
    while True:
        b = proc.stdout.read(1 << 16)
        if not b:
            break
        out += b
    feeder.join()
    errer.join()
    rc = proc.wait(timeout=120)
    return rc, bytes(out), b"".join(err_chunks).decode(errors="replace")


# ---- one case ------------------------------------------------------------


def random_kernel(rng, nrng, t, kh, kw, separable):
    k = np.empty((t, kh, kw))
    for tau in range(t):
        if separable:
            k[tau] = np.outer(nrng.uniform(-1, 1, kh), nrng.uniform(-1, 1, kw))
        else:
            k[tau] = nrng.uniform(-1, 1, (kh, kw))
    # Exactly representable in float32: every file type gives the same taps.
    return k.astype(np.float32).astype(np.float64)


def f32(v):
    """A number as the CLI sees it (parsed as double, stored as float)."""
    return float(np.float32(v))


def components_arg(rng, fmt):
    """A random --components value and the mask it means."""
    fam = fmt.family()
    if fam == "gray":
        return rng.choice([(None, 1), ("1", 1), ("all", 1), ("luma", 1),
                           ("y", 1)])
    mask = rng.randint(1, 7)
    style = rng.randrange(4)
    if style == 0:
        return None, 7
    if style == 1:
        return rng.choice([str(mask), hex(mask)]), mask
    names = ["r", "g", "b"] if fam == "rgb" else ["y", "u", "v"]
    if fam == "yuv" and mask == 1 and rng.random() < 0.5:
        return "luma", 1
    if fam == "yuv" and mask == 6 and rng.random() < 0.5:
        return "chroma", 6
    if mask == 7 and rng.random() < 0.5:
        return "all", 7
    picked = [names[i] for i in range(3) if mask >> i & 1]
    rng.shuffle(picked)
    return ",".join(picked), mask


def run_case(idx, cli, rng, tmp, fmt, stats, verbose):
    nrng = np.random.default_rng(rng.getrandbits(63))
    size_class = rng.random()
    if size_class < 0.15:    # tiny: kernels larger than the frame
        w, h = rng.randint(1, 4), rng.randint(1, 4)
    elif size_class < 0.94:
        w, h = rng.randint(1, 72), rng.randint(1, 56)
    else:                    # several FFT tiles, bands for each thread
        w, h = rng.randint(100, 320), rng.randint(60, 240)
    large = w * h > 72 * 56
    border = rng.choice(BORDERS)
    nframes = rng.randint(1, 3 if large else 6)
    use_preset = rng.random() < 0.25
    algos = ["auto", "direct", "fft"]
    desc_kernel = ""
    args = []
    path = None
    if use_preset:
        name = rng.choice(PRESETS)
        size = sigma = None
        if name in ("gaussian", "box", "unsharp") and rng.random() < 0.7:
            size = rng.randint(1, 9)
            if name == "unsharp" and size % 2 == 0:
                size += 1  # the delta's place is only clear for odd sizes
        if name in ("gaussian", "unsharp") and rng.random() < 0.5:
            sigma = round(rng.uniform(0.3, 4.0), 3)
        k = preset_kernel(name, size, sigma)[None]
        args += ["--preset", name]
        if size:
            args += ["--size", str(size)]
        if sigma:
            args += ["--sigma", repr(sigma)]
        desc_kernel = f"preset {name}" + (f" {size}" if size else "") + \
            (f" sigma {sigma}" if sigma else "")
        separable = name in ("gaussian", "box")
    else:
        t = 1 if rng.random() < 0.55 else rng.randint(2, 3)
        if rng.random() < 0.1:
            top = 17 if large else 33
            kh, kw = rng.randint(10, top), rng.randint(10, top)
        else:
            kh, kw = rng.randint(1, 9), rng.randint(1, 9)
        separable = rng.random() < 0.25
        k = random_kernel(rng, nrng, t, kh, kw, separable)
        path = os.path.join(tmp, f"k{idx}")
        if rng.random() < 0.5:
            path += ".txt"
            write_text(path, k, rng)
            kind = "text"
        else:
            path += ".npy"
            kind = "npy " + write_npy(path, k, rng)
        args += ["--kernel", path]
        desc_kernel = f"{t}x{kh}x{kw} {kind}"
    if separable and rng.random() < 0.5:
        algos = ["separable"]
    algo = rng.choice(algos)

    maxv = fmt.max_value()
    l1 = float(np.abs(k).sum()) or 1.0
    if maxv is None:
        scale = f32(rng.choice([1.0, rng.uniform(-3, 3)]))
        bias = f32(rng.choice([0.0, rng.uniform(-1, 1)]))
        cval = f32(rng.uniform(-2, 2))
    else:
        # Keep most outputs inside the range; some saturate.
        scale = f32(rng.uniform(0.5, 1.5) / l1 * rng.choice([1, 1, -1]))
        bias = f32(rng.uniform(0.0, 0.6) * maxv)
        if use_preset and name in ("gaussian", "box", "unsharp", "sharpen"):
            scale, bias = f32(rng.choice([1.0, 0.8])), 0.0
        cval = f32(round(rng.uniform(0, maxv)))
    absolute = rng.random() < 0.2
    comp_arg, mask = components_arg(rng, fmt)

    args += ["--width", str(w), "--height", str(h), "--format",
             rng.choice([fmt.name, fmt.name.lower()]), "--border", border,
             "--algorithm", algo, "--backend", "cpu",
             "--threads", str(rng.choice([0, 1, 2]))]
    # --cval only with --border constant (refused otherwise)
    if border == "constant":
        args += ["--cval", repr(cval)]
    else:
        cval = 0.0
    if scale != 1.0:
        args += ["--scale", repr(scale)]
    if bias != 0.0:
        args += ["--bias", repr(bias)]
    if absolute:
        args += ["--absolute"]
    if comp_arg is not None:
        args += ["--components", comp_arg]

    fb = fmt.frame_bytes(w, h)
    if fmt.sample == F32:
        data = nrng.standard_normal(nframes * fb // 4).astype("=f4").tobytes()
    elif fmt.sample == U16:
        data = nrng.integers(0, 65536, nframes * fb // 2).astype(
            "<u2").tobytes()
    else:
        data = nrng.integers(0, 256, nframes * fb, dtype=np.uint8).tobytes()

    what = (f"case {idx}: {fmt.name} {w}x{h} x{nframes} frames, "
            f"{desc_kernel}, {border}, {algo}, components {mask}"
            f"{' (' + comp_arg + ')' if comp_arg else ''}, scale {scale:g} "
            f"bias {bias:g}{' abs' if absolute else ''}"
            f"{' cval %g' % cval if border == 'constant' else ''}")
    if verbose:
        print(what, flush=True)
    rc, out, err = run_cli(cli, args, data, rng, fb)
    if rc != 0:
        return f"{what}: exit {rc}\n  args: {' '.join(args)}\n  {err}"
    if len(out) != len(data):
        return f"{what}: {len(out)} output bytes, want {len(data)}"

    ins = [fmt.planes(data[i * fb:(i + 1) * fb], w, h) for i in
           range(nframes)]
    outs = [fmt.planes(out[i * fb:(i + 1) * fb], w, h) for i in
            range(nframes)]
    for c in range(fmt.ncomp):
        selected = mask >> c & 1
        for t in range(nframes):
            got = outs[t][c]
            if not selected:
                if not np.array_equal(got, ins[t][c]):
                    return f"{what}: component {c} (not selected) changed " \
                        f"in frame {t}"
                continue
            ref = np.zeros(got.shape)
            # the frames before the first: black frames (raw YUV is taken
            # as limited range: Y 16, U = V 128; zeros otherwise)
            black = (0.0 if fmt.name not in ("I420", "NV12", "Y444", "Y42B")
                     else 128.0 if c else 16.0)
            for tau in range(k.shape[0]):
                src = (ins[t - tau][c].astype(np.float64) if tau <= t
                       else np.full(got.shape, black))
                ref += sp_convolve(src, k[tau], border, cval)
            ref = scale * ref + bias
            if absolute:
                ref = np.abs(ref)
            g = got.astype(np.float64)
            if maxv is None:
                # The sums' own magnitude: where the taps nearly cancel
                # (a 1-pixel-wide frame with border=wrap sums whole kernel
                # rows), float32's rounding of the terms exceeds 2e-5 of
                # the output (seed 1795846771, case 24: terms 79000 times
                # the output, error 2e-4 of it, on every algorithm).
                mag = np.zeros(got.shape)
                for tau in range(min(k.shape[0], t + 1)):
                    mag += sp_convolve(
                        np.abs(ins[t - tau][c].astype(np.float64)),
                        np.abs(k[tau]), border, abs(cval))
                mag = abs(scale) * mag + abs(bias)
                num = np.linalg.norm(g - ref)
                den = max(np.linalg.norm(ref), 1e-2 * np.linalg.norm(mag))
                e = num / den if den > 0 else num
                if not np.all(np.isfinite(g)):
                    e = float("inf")
                stats["float_worst"] = max(stats["float_worst"], e)
                if not e <= 2e-5:
                    return f"{what}\n  args: {' '.join(args)}\n  " \
                        f"frame {t} component {c}: relative L2 error {e:.3g}" \
                        " > 2e-5"
            else:
                want = np.clip(np.round(ref), 0, maxv)
                d = np.abs(g - want)
                worst = float(d.max())
                stats["int_worst"] = max(stats["int_worst"], worst)
                stats["int_off_by_one"] += int((d == 1).sum())
                stats["int_samples"] += d.size
                if worst > 1:
                    y, x = np.unravel_index(int(d.argmax()), d.shape)
                    return f"{what}\n  args: {' '.join(args)}\n  " \
                        f"frame {t} component {c} at (x {x}, y {y}): got " \
                        f"{g[y, x]:g}, want {want[y, x]:g} " \
                        f"(unrounded {ref[y, x]:.6g}); {int((d > 1).sum())}" \
                        f" of {d.size} samples off by more than 1"
    for t in range(nframes):
        a_in = fmt.alpha_bytes(data[t * fb:(t + 1) * fb], w, h)
        if a_in is not None and not np.array_equal(
                a_in, fmt.alpha_bytes(out[t * fb:(t + 1) * fb], w, h)):
            return f"{what}: alpha / X bytes changed in frame {t}"
    if path and not stats["keep"]:
        os.unlink(path)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int,
                    default=int(os.environ.get("CF_CONV2D_CASES", "220")))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--cli", default=os.environ.get("CF_CLI"))
    ap.add_argument("--keep", help="keep the kernel files in this folder")
    ap.add_argument("--keep-going", action="store_true",
                    help="run every case, then report all failures")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if not a.cli:
        ap.error("give --cli PATH or set CF_CLI")
    seed = a.seed
    if seed is None:
        env = os.environ.get("CF_TEST_SEED")
        seed = int(env) if env else int(time.time())
    print(f"seed {seed} (rerun with --seed {seed} or CF_TEST_SEED={seed})",
          flush=True)
    rng = random.Random(seed)
    stats = {"float_worst": 0.0, "int_worst": 0.0, "int_off_by_one": 0,
             "int_samples": 0, "keep": bool(a.keep)}
    failures = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cf-conv2d-") as tmp:
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            tmp = a.keep
        for i in range(a.cases):
            fmt = FORMATS[i % len(FORMATS)]  # every format, in turn
            msg = run_case(i, a.cli, rng, tmp, fmt, stats, a.verbose)
            if msg:
                print("FAIL " + msg, flush=True)
                failures.append(msg)
                if not a.keep_going:
                    break
    print(f"{a.cases if a.keep_going or not failures else i + 1} cases in "
          f"{time.monotonic() - t0:.1f} s; worst float relative L2 "
          f"{stats['float_worst']:.3g}; integer: worst {stats['int_worst']:g}"
          f" code values, {stats['int_off_by_one']} of "
          f"{stats['int_samples']} samples off by 1; reflect pre-padded "
          f"for scipy {SCIPY_WORKAROUNDS[0]} times")
    if failures:
        print(f"{len(failures)} failure(s); seed {seed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
