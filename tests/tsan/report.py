#!/usr/bin/env python3
"""Sorts ThreadSanitizer reports (log_path files) into ours and foreign.

Ours: every access stack of the report has a frame in this source tree
(src/, plugins/, tests/): two of our code paths meet without a lock.
Foreign: a stack with none of our frames, which here is always a hand-over
made under a lock or an atomic that TSan cannot see, inside GLib or
GStreamer (README.md). Prints each distinct report of ours in full (the
first of its kind), a count of the foreign ones by where they happen, and
exits 1 when there is any of ours.

    report.py REPORT_DIR SOURCE_ROOT
"""
import collections
import glob
import os
import re
import sys

ACCESS = re.compile(r"^  (Write|Read|Atomic read|Atomic write|Previous \w+)"
                    r".* by (main thread|thread T\d+)")
FRAME = re.compile(r"^\s+#\d+ (\S+) (\S+)(?: \(([^+)]+))?")


def stacks(report):
    """The access stacks of a report: lists of (function, location)."""
    out, cur = [], None
    for line in report.splitlines():
        if ACCESS.match(line):
            cur = []
            out.append(cur)
        elif cur is not None and FRAME.match(line):
            fn, loc, lib = FRAME.match(line).groups()
            if loc == "<null>" and lib:
                loc = os.path.basename(lib)
            cur.append((fn, loc))
        elif cur is not None and not line.strip():
            cur = None
    return out


def main():
    rep_dir, root = sys.argv[1], os.path.realpath(sys.argv[2])
    tree = ("src/", "plugins/", "tests/")

    def ours(loc):
        path = re.sub(r"^(\.\./)+", "/", loc.split(":")[0])
        if path.startswith("/"):
            path = os.path.realpath(path) if os.path.exists(path) else path
            if not path.startswith(root + "/"):
                return None
            path = path[len(root) + 1:]
        return path if path.startswith(tree) and "/tsan/" not in path else None

    def foreign_call(stack):
        """An access made by an interceptor (free, memcpy, ...) that a
        GLib/GStreamer function called: a buffer or message freed by the
        thread that dropped its last reference, say."""
        inner = [(fn, loc) for fn, loc in stack
                 if "tsan_interceptors" not in loc and
                 "sanitizer_common" not in loc]
        return (len(inner) < len(stack) and bool(inner) and
                not ours(inner[0][1]))

    mine, foreign, seen = [], collections.Counter(), set()
    for f in sorted(glob.glob(os.path.join(rep_dir, "*"))):
        text = open(f, errors="replace").read()
        for rep in text.split("==================\n"):
            head = re.search(r"WARNING: ThreadSanitizer: ([^(\n]+)", rep)
            if not head:
                continue
            kind = head.group(1).strip()
            st = stacks(rep)
            if kind == "data race" and st and all(
                    any(ours(loc) for _, loc in s) and not foreign_call(s)
                    for s in st):
                key = tuple(next(f"{fn} {ours(loc)}" for fn, loc in s
                                 if ours(loc)) for s in st)
                if key not in seen:
                    seen.add(key)
                    mine.append((f, rep))
                continue
            top = next((f"{fn} ({os.path.basename(loc.split(':')[0])})"
                        for s in st for fn, loc in s
                        if "tsan_interceptors" not in loc and
                        "sanitizer_common" not in loc), None)
            if top is None:  # not a race: where its summary says
                m = re.search(r"SUMMARY: ThreadSanitizer: [^(\n]*(.*)", rep)
                top = m.group(1).strip() if m else "?"
                top = re.sub(r"\+0x[0-9a-f]+|/lib/x86_64-linux-gnu/", "", top)
            foreign[f"{kind}: {top}"] += 1
    for f, rep in mine:
        print(f"== {f}\n{rep}")
    if foreign:
        print("foreign reports (GLib/GStreamer hand-overs TSan cannot see):")
        for k, n in foreign.most_common():
            print(f"  {n:4d}  {k}")
    print(f"{len(mine)} race(s) between our own code paths")
    return 1 if mine else 0


if __name__ == "__main__":
    sys.exit(main())
