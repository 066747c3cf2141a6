#!/usr/bin/env python3
"""Damaged media files through `cudafilter apply`. Not part of CI; run it
against a sanitizer build:

    tests/fuzz/apply_storm.py /tmp/b-asan [RUNS [SEED]]

Inputs are made with gst-launch-1.0 where its plugins are installed (WAV,
FLAC, Y4M, Matroska with VP8 and Vorbis, Ogg Theora), then each run cuts,
flips bytes in, or inserts bytes into one and filters it (audio with a
3-tap kernel, video with preset box) into a random output format. Every
run must exit 0, 1 or 2, with a message when not 0, leave no OUTPUT and no
temporary file when it fails, and show no sanitizer report. Exit status 1
when one did not.
"""
import collections
import os
import random
import subprocess
import sys
import tempfile

build = sys.argv[1] if len(sys.argv) > 1 else "build"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 300
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
exe = os.path.abspath(os.path.join(build, "src", "cudafilter"))
r = random.Random(seed)
work = tempfile.mkdtemp(prefix="cf-apply-storm-")
os.chdir(work)
env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0",
           UBSAN_OPTIONS="print_stacktrace=1")
SANITIZER = ("AddressSanitizer", "runtime error", "LeakSanitizer")

with open("k.txt", "w") as f:
    f.write("0.25 0.5 0.25\n")
MAKE = {
    "in.wav": "audiotestsrc num-buffers=40 ! audio/x-raw,channels=2 ! wavenc",
    "in.flac": "audiotestsrc num-buffers=40 ! audio/x-raw,channels=2 ! flacenc",
    "v.y4m": "videotestsrc num-buffers=10 ! video/x-raw,format=I420,"
             "width=64,height=48 ! y4menc",
    "av.mkv": "matroskamux name=m ! filesink location=av.mkv "
              "videotestsrc num-buffers=10 ! video/x-raw,width=64,height=48 "
              "! vp8enc ! queue ! m. audiotestsrc num-buffers=10 ! "
              "vorbisenc ! queue ! m.",
    "v.ogv": "videotestsrc num-buffers=10 ! video/x-raw,width=64,height=48 "
             "! theoraenc ! oggmux",
}
sources = []
for name, line in MAKE.items():
    if "filesink" not in line:
        line += " ! filesink location=" + name
    subprocess.run(["gst-launch-1.0", "-q"] + line.split(),
                   capture_output=True)
    if os.path.exists(name) and os.path.getsize(name) > 0:
        sources.append(name)
if not sources:
    sys.exit("apply_storm: gst-launch-1.0 made no input")
VIDEO = {"v.y4m", "v.ogv"}
codes = collections.Counter()
failures = 0
for t in range(runs):
    src = r.choice(sources)
    data = bytearray(open(src, "rb").read())
    k = r.random()
    if k < 0.3:
        data = data[: r.randrange(len(data))]
    elif k < 0.8:
        for _ in range(r.randint(1, 20)):
            span = min(len(data), r.choice([64, 512, 4096, len(data)]))
            data[r.randrange(span)] = r.getrandbits(8)
    else:
        i = r.randrange(len(data))
        data[i:i] = bytes(r.getrandbits(8) for _ in range(r.randint(1, 100)))
    inp = "damaged" + os.path.splitext(src)[1]
    open(inp, "wb").write(data)
    video = src in VIDEO or (src == "av.mkv" and r.random() < 0.5)
    out = r.choice(["o.mkv", "o.y4m", "o.mp4"] if video
                   else ["o.wav", "o.flac", "o.mkv", "o.ogg"])
    if os.path.exists(out):
        os.unlink(out)
    kernel = ["--preset", "box"] if video else ["-k", "k.txt"]
    argv = [exe, "apply", "-q"] + kernel + [inp, out]
    try:
        res = subprocess.run(argv, capture_output=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        failures += 1
        print("FAIL: hung:", " ".join(argv))
        continue
    codes[res.returncode] += 1
    err = res.stderr.decode("utf-8", "replace")
    temps = [f for f in os.listdir(".") if f.startswith(".") or
             (f.startswith(out) and f != out)]
    if (res.returncode not in (0, 1, 2) or any(s in err for s in SANITIZER)
            or (res.returncode and (not err.strip() or os.path.exists(out)))
            or temps):
        failures += 1
        kept = "failed-%d%s" % (t, os.path.splitext(src)[1])
        os.rename(inp, kept)
        print("FAIL: %s -> exit %d, left %s: %s" %
              (kept, res.returncode, temps, err[-1500:]))
        for f in temps:
            os.unlink(f)
        if failures > 5:
            break
print("%d runs (exit codes %s), %d failure(s); work folder %s" %
      (runs, dict(codes), failures, work))
sys.exit(1 if failures else 0)
