#!/usr/bin/env python3
"""Random input for cudafilterd's two readers: its control socket and its
config file. Not part of CI; run it against a sanitizer build:

    meson setup /tmp/b-asan -Db_sanitize=address,undefined -Db_lundef=false
    ninja -C /tmp/b-asan
    tests/fuzz/daemon_storm.py /tmp/b-asan [COMMANDS [CONFIGS [SEED]]]

Commands (default 2000): a daemon runs a cudafir pipeline, a videoconvert !
cudaconvolve pipeline and a file stream; each connection sends one line:
mostly commands built from the daemon's verbs, stream names, element
properties and odd values, some raw bytes, empty lines, CR LF, NULs,
kernels of thousands of taps. Every line must be answered ("ok" last, or
"error: ..."), the daemon must exit 0 on SIGTERM, and its log must hold no
sanitizer report. Configs (default 300): a valid config mutated (keys and
values replaced, inserted, deleted, cut, bytes flipped, sections added)
and checked with --check: exit 0, 1 or 2, a message when not 0, no
sanitizer report. Exit status 1 when anything else happened.
"""
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import wave

build = sys.argv[1] if len(sys.argv) > 1 else "build"
ncmd = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
nconf = int(sys.argv[3]) if len(sys.argv) > 3 else 300
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
daemon = os.path.join(build, "src", "daemon", "cudafilterd")
r = random.Random(seed)
work = tempfile.mkdtemp(prefix="cf-daemon-storm-")
env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(build, "plugins"),
           GST_REGISTRY=os.path.join(work, "registry.bin"),
           GST_REGISTRY_FORK="no",
           ASAN_OPTIONS="detect_leaks=0",
           UBSAN_OPTIONS="print_stacktrace=1")
SANITIZER = ("AddressSanitizer", "runtime error", "LeakSanitizer")

with wave.open(os.path.join(work, "in.wav"), "wb") as w:
    w.setnchannels(2)
    w.setsampwidth(2)
    w.setframerate(48000)
    w.writeframes(b"".join(struct.pack("<hh", r.randint(-9000, 9000),
                                       r.randint(-9000, 9000))
                           for _ in range(48000 * 2)))
with open(os.path.join(work, "k.txt"), "w") as f:
    f.write("0.25 0.5 0.25\n")
with open(os.path.join(work, "k2.txt"), "w") as f:
    f.write("1 2 1\n2 4 2\n1 2 1\n")
CONF = """[stream a]
type = pipeline
pipeline = audiotestsrc is-live=true samplesperbuffer=256 ! audio/x-raw,format=F32LE,channels=2,rate=48000 ! cudafir name=fir kernel="<0.5,0.25>" backend=cpu ! fakesink

[stream v]
type = pipeline
pipeline = videotestsrc is-live=true ! video/x-raw,width=64,height=48,framerate=30/1 ! videoconvert ! cudaconvolve name=conv backend=cpu preset=box ! fakesink

[stream f]
type = file
input = in.wav
output = out.wav
kernel-file = k.txt
realtime = true
"""
conf = os.path.join(work, "d.conf")
with open(conf, "w") as f:
    f.write(CONF)
failures = 0


def fail(*what):
    global failures
    failures += 1
    print("FAIL:", *what)


# ---- the control socket ------------------------------------------------
VERBS = ["status", "set", "swap-kernel", "restart", "reload", "statu", "",
         "SET"]
STREAMS = ["a", "v", "f", "nope", "", "a.b", "*", "../a"]
KEYS = ["gain", "kernel", "fir.kernel", "conv.components", "conv.preset",
        "conv.size", "conv.sigma", "components", "preset", "size", "sigma",
        "kernel2d", "crossfade", "fir.block-size", "conv.border",
        "conv.kernel", "state", "fir.nope", "conv.", ".x", "fir..kernel",
        "kernel-file", "conv.pipeline-depth", "fir.drain", "fir.name",
        "conv.parent", "fir.latency", "conv.backend-in-use", "--json",
        "realtime"]
VALS = ["0", "-3", "1e309", "nan", "inf", "-inf", "<0.5,0.25>", "<>", "<",
        "0.5,x", "luma", "rgb", "gb", "all", "gaussian", "sobel-x", "box",
        "13", "0x10", "4294967296", "-1", "", "k.txt", "k2.txt",
        "/nonexistent", "in.wav", "PLAYING", "NULL", "true", "\"quoted\"",
        "{1,2}", "a b c", "\x01\x02", "\u00e9", "%s%n%x", "9" * 400]


def command():
    k = r.random()
    if k < 0.08:
        return bytes(r.getrandbits(8) for _ in range(r.randint(0, 60))) + b"\n"
    if k < 0.12:
        taps = ",".join("%.4f" % r.uniform(-1, 1)
                        for _ in range(r.randint(1, 3000)))
        return ("set a kernel " + taps + "\n").encode()
    words = [r.choice(VERBS)]
    if words[0] == "set" and r.random() < 0.7:
        words += [r.choice(STREAMS), r.choice(KEYS), r.choice(VALS)]
    else:
        words += [r.choice(STREAMS + KEYS + VALS)
                  for _ in range(r.randint(0, 4))]
    line = r.choice([" ", "\t", "  "]).join(words)
    end = r.choice(["\n", "\r\n", "\n", "\n", "", "\nstatus\n"])
    return (line + end).encode()


def storm():
    sock = os.path.join(work, "d.sock")
    log = open(os.path.join(work, "daemon.log"), "w")
    p = subprocess.Popen([daemon, "-c", conf, "-s", sock], cwd=work, env=env,
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        if os.path.exists(sock):
            break
        time.sleep(0.1)
    for i in range(ncmd):
        line = command()
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(10)
        ans = b""
        try:
            c.connect(sock)
            c.sendall(line)
            c.shutdown(socket.SHUT_WR)
            while True:
                d = c.recv(65536)
                if not d:
                    break
                ans += d
        except OSError as e:
            fail("command %d %r: %s" % (i, line[:100], e))
        c.close()
        if not (ans.endswith(b"ok\n") or ans.startswith(b"error: ")
                or b"\nerror: " in ans):
            fail("command %d %r answered %r" % (i, line[:100], ans[:200]))
        if failures > 10 or p.poll() is not None:
            break
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "hung"
    log.close()
    text = open(os.path.join(work, "daemon.log"), errors="replace").read()
    if rc != 0 or any(s in text for s in SANITIZER):
        fail("daemon exited %s; log: %s" % (rc, text[-3000:]))
    print("commands: %d sent, daemon exit %s" % (ncmd, rc))


# ---- the config file ---------------------------------------------------
CKEYS = ["type", "input", "output", "rate", "channels", "block",
         "kernel-file", "kernel", "gain", "crossfade", "backend", "device-id",
         "pipeline", "realtime", "preset", "size", "sigma", "kernel2d",
         "components", "border", "cval", "scale", "bias", "absolute",
         "algorithm", "restart", "restart-delay", "format", "codec", "stream",
         "socket", "threads", "routing", "trim", "drain", "pipeline-depth"]
CVALS = ["0", "1", "-1", "48000", "0.5", "1e309", "nan", "inf", "", "yes",
         "true", "maybe", "cpu", "cuda", "auto", "k.txt", "k2.txt", "in.wav",
         "/nonexistent", "..", "/", "a.wav", "x.mkv", "gaussian", "sobel-x",
         "luma", "rgb", "mirror", "file", "audio", "pipeline", "video",
         "fakesrc ! fakesink", "audiotestsrc ! nope", "!", "4294967297",
         "99999999999999999999", "0x10", "1,2,3", "<1,2>", "\\", "\"",
         "\u00e9", "\t", "a" * 5000]
BASE = CONF + """
[stream m]
type = audio
input = default
output = default
rate = 48000
channels = 2
block = 256
kernel-file = k.txt

[stream vf]
type = file
input = in.wav
output = vout.wav
preset = gaussian
size = 5
"""


def mutate(text):
    lines = text.split("\n")
    for _ in range(r.randint(1, 6)):
        k = r.random()
        i = r.randrange(len(lines))
        kv = "%s = %s" % (r.choice(CKEYS), r.choice(CVALS))
        if k < 0.3:
            lines[i] = kv
        elif k < 0.45:
            lines.insert(i, kv)
        elif k < 0.55:
            del lines[i]
        elif k < 0.62:
            lines.insert(i, "[stream %s]" % r.choice(
                ["a", "b", "", "x y", "a.b", "daemon", "\u00e9"]))
        elif k < 0.67:
            lines.insert(i, r.choice(["[daemon]", "[", "]", "[stream", "=",
                                      "==", "key", "# c", ";c",
                                      "[Stream q]"]))
        elif k < 0.72:
            lines[i] = lines[i][: r.randrange(len(lines[i]) + 1)]
        elif k < 0.76:
            b = bytearray(lines[i].encode("utf-8", "surrogateescape"))
            if b:
                b[r.randrange(len(b))] = r.getrandbits(8)
            lines[i] = b.decode("utf-8", "surrogateescape")
        else:
            j = r.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def configs():
    path = os.path.join(work, "m.conf")
    for t in range(nconf):
        text = mutate(BASE)
        with open(path, "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape"))
        try:
            res = subprocess.run([daemon, "-c", path, "--check"], cwd=work,
                                 env=env, capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            fail("config %d: --check hung" % t)
            continue
        err = res.stderr.decode("utf-8", "replace")
        if (res.returncode not in (0, 1, 2) or any(s in err for s in SANITIZER)
                or (res.returncode != 0 and not err.strip())):
            kept = os.path.join(work, "failed-%d.conf" % t)
            os.rename(path, kept)
            fail("config %d (%s): exit %d: %s" % (t, kept, res.returncode,
                                                  err[-2000:]))
        if failures > 10:
            break
    print("configs: %d checked" % nconf)


if ncmd:
    storm()
if nconf:
    configs()
print("%d failure(s); work folder %s" % (failures, work))
sys.exit(1 if failures else 0)
