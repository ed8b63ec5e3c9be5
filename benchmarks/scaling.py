#!/usr/bin/env python3
"""Scaling study: racedar's time and memory against program size.

Generates synthetic programs with benchmarks/synth.py (a fixed number of threads; functions,
locks and shared variables growing with the size), runs `racedar check --format json` on
each (the JSON's `stats`: per-phase wall time and peak RSS) and prints a Markdown table:
lines, functions with a body, CFG edges, wall time of the whole run (median of --repeat
runs, measured around the process), the analysis phases, peak RSS (os.wait4), and the time
per 1000 lines (flat when the growth is linear).

Usage (from the repository root, after `cargo build --release`):
    python3 benchmarks/scaling.py [--sizes 1000 2000 5000 10000 20000 50000 100000]
                                  [--threads 4] [--repeat 3] [--racedar target/release/racedar]
                                  [--keep DIR] [--json-out FILE] [-- EXTRA RACEDAR ARGS]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PHASES = ["preprocess", "parse", "lower", "model", "threads", "lockset", "mhp", "races",
          "deadlocks", "concrete"]


def run_once(cmd):
    """Runs `cmd`; returns (wall seconds, peak RSS in KiB, exit status, stdout)."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    p.stdout.close()
    return wall, usage.ru_maxrss, os.waitstatus_to_exitcode(status), out


def measure(racedar, path, repeat, extra):
    """Median wall, max RSS and the per-phase times (of the median run) of `path`."""
    runs = []
    for _ in range(repeat):
        wall, rss, code, out = run_once([racedar, "check", "--no-cache", "--format", "json", *extra, path])
        try:
            report = json.loads(out)
        except ValueError:
            report = {"verdict": f"error (exit {code})", "stats": {}}
        runs.append((wall, rss, report))
    runs.sort(key=lambda r: r[0])
    wall, _, report = runs[len(runs) // 2]
    rss = max(r[1] for r in runs)
    stats = report.get("stats", {})
    phases = {p["name"]: p["ms"] for p in stats.get("phases", [])}
    return {
        "wall_s": wall,
        "peak_rss_mib": rss / 1024.0,
        "phases_ms": phases,
        "functions": stats.get("functions"),
        "edges": stats.get("edges"),
        "verdict": report.get("verdict"),
        "races": len(report.get("races", [])),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+",
                    default=[1000, 2000, 5000, 10000, 20000, 50000, 100000])
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--racedar", default=os.path.join(ROOT, "target", "release", "racedar"))
    ap.add_argument("--keep", help="write the generated programs into this folder")
    ap.add_argument("--json-out", help="write the measurements as JSON")
    ap.add_argument("extra", nargs="*", help="extra racedar check arguments (after --)")
    args = ap.parse_args()
    tmp = None
    folder = args.keep
    if folder is None:
        tmp = tempfile.TemporaryDirectory(prefix="racedar-scaling-")
        folder = tmp.name
    os.makedirs(folder, exist_ok=True)
    rows = []
    for size in args.sizes:
        path = os.path.join(folder, f"synth-{size}-t{args.threads}.c")
        subprocess.run([sys.executable, os.path.join(HERE, "synth.py"), "--lines", str(size),
                        "--threads", str(args.threads), "-o", path], check=True)
        with open(path) as f:
            lines = sum(1 for _ in f)
        m = measure(args.racedar, path, args.repeat, args.extra)
        m["lines"] = lines
        rows.append(m)
        print(f"measured {lines} lines: {m['wall_s']:.2f} s", file=sys.stderr)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    shown = [p for p in PHASES if any(p in r["phases_ms"] for r in rows)]
    head = ["lines", "functions", "CFG edges", "wall s"] + [f"{p} ms" for p in shown] + \
        ["peak RSS MiB", "ms / 1k lines", "verdict (races)"]
    print(f"Threads: {args.threads}; median of {args.repeat} runs; load average before the "
          f"last run: {load}")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [str(r["lines"]), str(r["functions"]), str(r["edges"]), f"{r['wall_s']:.2f}"]
        cells += [f"{r['phases_ms'].get(p, 0.0):.0f}" for p in shown]
        cells += [f"{r['peak_rss_mib']:.0f}", f"{1000.0 * r['wall_s'] * 1000.0 / r['lines']:.1f}",
                  f"{r['verdict']} ({r['races']})"]
        print("| " + " | ".join(cells) + " |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"threads": args.threads, "repeat": args.repeat, "load": load,
                       "rows": rows}, f, indent=1)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
