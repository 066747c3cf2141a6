#!/usr/bin/env python3
"""No kernel of ours spills registers or keeps a stack frame.

Compiles each kernels/*.cu for each real architecture the build targets
(cubin, ptxas -v) and reads ptxas's report: a kernel with spill stores,
spill loads or a stack frame fails the test, named with its architecture,
registers and bytes. A spill is local memory traffic in what should be a
loop over registers and shared memory, and it appears silently when a
change adds a live value (or a new ptxas decides differently), so CI
compiles and reads it on every run; no device is needed.

usage: kernel_spills.py --nvcc NVCC [--arch 80 --arch 90 ...]
                        [-I DIR ...] [-D DEF ...] FILE.cu ...
Prints every kernel's registers and bytes, then a line per architecture.
Exit status 0 when every kernel is clean, 1 otherwise, 77 (skipped) where
nvcc cannot be run.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+)'")
PROPS = re.compile(r"Function properties for (\S+)")
FRAME = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")


def compile_one(nvcc, src, arch, extra, tmp):
    out = os.path.join(tmp, f"{os.path.basename(src)}.sm_{arch}.cubin")
    cmd = [nvcc, "-cubin", "-O3", "--std=c++17",
           f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xptxas=-v",
           *extra, "-o", out, src]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    return src, arch, cmd, p.returncode, p.stdout


def parse(text):
    """Entry functions of one ptxas report: name -> dict."""
    kernels = {}
    cur = None       # the entry being reported
    props = None     # the function whose properties follow
    for line in text.splitlines():
        m = ENTRY.search(line)
        if m:
            cur = m.group(1)
            kernels[cur] = {"arch": m.group(2), "regs": None, "frame": 0,
                            "stores": 0, "loads": 0}
            props = None
            continue
        m = PROPS.search(line)
        if m:
            props = m.group(1)
            continue
        m = FRAME.search(line)
        if m and cur is not None and props == cur:
            k = kernels[cur]
            k["frame"], k["stores"], k["loads"] = map(int, m.groups())
            continue
        m = USED.search(line)
        if m and cur is not None:
            kernels[cur]["regs"] = int(m.group(1))
    return kernels


def demangle(names):
    cxxfilt = shutil.which("c++filt")
    if not cxxfilt or not names:
        return {n: n for n in names}
    p = subprocess.run([cxxfilt], input="\n".join(names), text=True,
                       stdout=subprocess.PIPE)
    out = p.stdout.splitlines()
    if p.returncode != 0 or len(out) != len(names):
        return {n: n for n in names}
    return dict(zip(names, out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", required=True)
    ap.add_argument("--arch", action="append", default=[])
    ap.add_argument("-I", dest="inc", action="append", default=[])
    ap.add_argument("-D", dest="defs", action="append", default=[])
    ap.add_argument("sources", nargs="+")
    a = ap.parse_args()
    archs = a.arch or ["80", "90"]
    nvcc = shutil.which(a.nvcc) or a.nvcc
    if not os.access(nvcc, os.X_OK):
        print(f"skipped: nvcc not found ({a.nvcc})")
        return 77
    extra = [f"-I{d}" for d in a.inc] + [f"-D{d}" for d in a.defs]
    jobs = [(s, arch) for s in a.sources for arch in archs]
    results = []
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        futs = [ex.submit(compile_one, nvcc, s, arch, extra, tmp)
                for s, arch in jobs]
        for f in futs:
            results.append(f.result())

    rows = []        # (src, arch, name, info)
    failed = False
    for src, arch, cmd, rc, text in results:
        if rc != 0:
            print(f"FAIL: {os.path.basename(src)} for sm_{arch} did not "
                  f"compile (exit {rc}):\n  {' '.join(cmd)}\n{text}")
            failed = True
            continue
        kernels = parse(text)
        if not kernels:
            print(f"FAIL: no ptxas report for {os.path.basename(src)} "
                  f"sm_{arch}:\n{text}")
            failed = True
        for name, k in kernels.items():
            rows.append((os.path.basename(src), arch, name, k))

    names = demangle(sorted({r[2] for r in rows}))
    bad = [r for r in rows
           if r[3]["stores"] or r[3]["loads"] or r[3]["frame"]]
    for src, arch, name, k in sorted(rows):
        print(f"  sm_{arch} {src}: {names[name]}: {k['regs']} registers,"
              f" {k['frame']} bytes stack frame, {k['stores']}/"
              f"{k['loads']} bytes spill stores/loads")
    for src, arch, name, k in sorted(bad):
        print(f"FAIL: sm_{arch} {src}: {names[name]}: {k['regs']} registers,"
              f" {k['frame']} bytes stack frame, {k['stores']} bytes spill "
              f"stores, {k['loads']} bytes spill loads")
    for arch in archs:
        mine = [r for r in rows if r[1] == arch]
        if not mine:
            continue
        top = max(mine, key=lambda r: r[3]["regs"] or 0)
        nbad = sum(1 for r in bad if r[1] == arch)
        print(f"sm_{arch}: {len(mine)} kernels in "
              f"{len({r[0] for r in mine})} files, {nbad} with spills or a "
              f"stack frame; most registers: {top[3]['regs']} "
              f"({names[top[2]]})")
    if bad:
        failed = True
    print("spills: " + ("FAIL" if failed else "none"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
