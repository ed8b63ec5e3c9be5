#!/usr/bin/env python3
"""racedar against `gcc -fsyntax-only`: wall time per corpus task, side by side.

For every task of the selected suites (default: svcomp) runs, on the same file with the same
include directories, `racedar check --no-cache --format json --data-model M -I ... FILE`
(what score.py runs; `--no-cache` so that every repetition preprocesses, as gcc does) and `gcc -fsyntax-only -I ... FILE` (preprocessing and parsing only; the
`.c` files are read with the host's headers by both, see README "How C is read"), each
--repeat times, and keeps the median wall time of each. Prints a summary (medians, p90 and
the median of the per-task ratios racedar / gcc) and the tasks with the largest ratios.

Usage (from the repository root, after `cargo build --release`):
    python3 benchmarks/vs_gcc.py [--suite svcomp] [--repeat 5] [--racedar target/release/racedar]
                                 [--cc gcc] [--corpus ../shared/corpus] [--top 10]
                                 [--json-out FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def wall(cmd):
    """Wall seconds of one run of `cmd` (output discarded) and its exit status."""
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start, p.returncode


def median_wall(cmd, repeat):
    runs = [wall(cmd) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), runs[-1][1]


def percentile(xs, q):
    """The q-th percentile (nearest rank) of xs."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, int(round(q / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", nargs="+", default=["svcomp"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--racedar", default=os.path.join(ROOT, "target", "release", "racedar"))
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus"))
    ap.add_argument("--top", type=int, default=10, help="list the tasks with the largest ratios")
    ap.add_argument("--json-out", help="write the per-task times as JSON")
    args = ap.parse_args()
    manifest = os.path.join(args.corpus, "manifest.jsonl")
    if not os.path.exists(manifest):
        print(f"skipped: no corpus at {args.corpus}")
        return
    tasks = []
    with open(manifest) as f:
        for line in f:
            t = json.loads(line)
            if t["suite"] in args.suite:
                tasks.append(t)
    rows = []
    for i, t in enumerate(tasks):
        path = os.path.join(args.corpus, t["path"])
        includes = []
        for d in t.get("include_dirs", []):
            includes += ["-I", os.path.join(args.corpus, d)]
        r, rcode = median_wall([args.racedar, "check", "--no-cache", "--format", "json", "--data-model",
                                t["data_model"], *includes, path], args.repeat)
        g, gcode = median_wall([args.cc, "-fsyntax-only", "-w", *includes, path], args.repeat)
        rows.append({"id": t["id"], "racedar_s": r, "gcc_s": g, "ratio": r / g if g > 0 else 0.0,
                     "racedar_exit": rcode, "gcc_exit": gcode})
        print(f"[{i + 1}/{len(tasks)}] {t['id']}: racedar {r * 1000:.1f} ms, gcc {g * 1000:.1f} ms",
              file=sys.stderr)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    rs = [r["racedar_s"] * 1000 for r in rows]
    gs = [r["gcc_s"] * 1000 for r in rows]
    ratios = [r["ratio"] for r in rows]
    print(f"{len(rows)} tasks of {', '.join(args.suite)}; median of {args.repeat} runs each; "
          f"load average at the end: {load}")
    print()
    print("| | median | p90 | max |")
    print("|---|---|---|---|")
    print(f"| racedar check (ms) | {statistics.median(rs):.1f} | {percentile(rs, 90):.1f} | "
          f"{max(rs):.1f} |")
    print(f"| gcc -fsyntax-only (ms) | {statistics.median(gs):.1f} | {percentile(gs, 90):.1f} | "
          f"{max(gs):.1f} |")
    print(f"| ratio racedar / gcc (per task) | {statistics.median(ratios):.2f} | "
          f"{percentile(ratios, 90):.2f} | {max(ratios):.2f} |")
    failed = [r["id"] for r in rows if r["gcc_exit"] != 0]
    if failed:
        print()
        print(f"gcc -fsyntax-only failed on {len(failed)} task(s): {', '.join(failed[:10])}")
    if args.top > 0:
        print()
        print(f"Largest ratios:")
        print()
        print("| task | racedar ms | gcc ms | ratio |")
        print("|---|---|---|---|")
        for r in sorted(rows, key=lambda r: -r["ratio"])[:args.top]:
            print(f"| {r['id']} | {r['racedar_s'] * 1000:.1f} | {r['gcc_s'] * 1000:.1f} | "
                  f"{r['ratio']:.2f} |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"repeat": args.repeat, "load": load, "tasks": rows}, f, indent=1)


if __name__ == "__main__":
    main()
