#!/usr/bin/env python3
"""Corpus runner: builds racedar (release), scores it on the shared corpus with
../shared/corpus/score.py, and prints the time and memory table (per suite and per
real-world program) with the speed targets of issue 7.

Usage (from anywhere; the corpus is ../shared/corpus beside the checkout):
    python3 benchmarks/corpus.py [--suite svcomp annotated realworld racerf] [--jobs 1]
                                 [--timeout 60] [--json-out FILE] [--no-build] [--warm]
                                 [--from-json FILE]    (only print the tables of an earlier run)

Every run uses a fresh, empty racedar cache directory (RACEDAR_CACHE_DIR), so the times are
those of a first run on files racedar has never seen (the preprocessor runs for every task;
only the first task asks the compiler driver for its preprocessor command). --warm first runs
the suites once unmeasured, then measures a second run: files analysed again unchanged, as in
a pre-commit hook (preprocessed units come from the cache).

--jobs 1 (the default) gives the least disturbed times; score.py measures wall time and peak
RSS (os.wait4) of each run, process start included.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
SUITES = ["svcomp", "annotated", "realworld", "racerf"]


def percentile(xs, q):
    """The q-th percentile (nearest rank) of xs."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, int(round(q / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def lines_of(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def tables(result, corpus):
    tasks = result["tasks"]
    by_suite = {}
    for t in tasks:
        by_suite.setdefault(t["suite"], []).append(t)
    print("| suite | tasks | completed | wall median ms | p90 ms | max ms | RSS median MiB | "
          "max MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for suite in sorted(by_suite):
        ts = by_suite[suite]
        done = [t for t in ts if t["status"] == "ok"]
        w = [t["wall_s"] * 1000 for t in ts if t.get("wall_s") is not None]
        m = [t["max_rss_kb"] / 1024 for t in ts if t.get("max_rss_kb") is not None]
        print(f"| {suite} | {len(ts)} | {len(done)} | {statistics.median(w):.1f} | "
              f"{percentile(w, 90):.1f} | {max(w):.1f} | {statistics.median(m):.1f} | "
              f"{max(m):.1f} |")
    rw = by_suite.get("realworld", [])
    paths = {}
    with open(os.path.join(corpus, "manifest.jsonl")) as f:
        for line in f:
            t = json.loads(line)
            paths[t["id"]] = os.path.join(corpus, t["path"])
    if rw:
        print()
        print("| real-world program | lines | status | verdict | wall s | peak RSS MiB |")
        print("|---|---|---|---|---|---|")
        for t in sorted(rw, key=lambda t: lines_of(paths.get(t["id"], ""))):
            print(f"| {t['id'].split('/', 1)[-1]} | {lines_of(paths.get(t['id'], ''))} | "
                  f"{t['status']} | {t.get('verdict')} | {t['wall_s']:.2f} | "
                  f"{t['max_rss_kb'] / 1024:.0f} |")
    # The targets of issue 7 ("Speed and scale").
    print()
    sv = [t["wall_s"] * 1000 for t in by_suite.get("svcomp", [])]
    if sv:
        med, p90 = statistics.median(sv), percentile(sv, 90)
        print(f"svcomp wall per task: median {med:.1f} ms (target <= 20), p90 {p90:.1f} ms "
              f"(target <= 100)")
    if rw:
        bad = [t["id"] for t in rw if t["status"] != "ok"]
        largest = max(rw, key=lambda t: lines_of(paths.get(t["id"], "")))
        print(f"realworld: {len(rw) - len(bad)}/{len(rw)} completed"
              + (f" (not: {', '.join(bad)})" if bad else ""))
        print(f"largest ({largest['id']}, {lines_of(paths.get(largest['id'], ''))} lines): "
              f"{largest['wall_s']:.2f} s (target < 5), {largest['max_rss_kb'] / 1024:.0f} MiB "
              f"(target < 1024)")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", nargs="+", default=SUITES)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--json-out")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--from-json", help="print the tables of an earlier --json-out")
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--warm", action="store_true",
                    help="measure a second run, with the caches filled by a first one")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            tables(json.load(f), args.corpus)
        return
    score = os.path.join(args.corpus, "score.py")
    if not os.path.exists(score):
        print(f"skipped: no corpus at {args.corpus}")
        return
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    racedar = os.path.join(ROOT, "target", "release", "racedar")
    out = args.json_out or os.path.join(tempfile.mkdtemp(prefix="racedar-corpus-"), "run.json")
    cmd = f"{racedar} check --format json --data-model {{data_model}} {{includes}} {{file}}"
    cache = tempfile.mkdtemp(prefix="racedar-cache-")
    env = dict(os.environ, RACEDAR_CACHE_DIR=cache)
    runs = [os.path.join(cache, "first.json")] if args.warm else []
    for json_out in runs + [out]:
        subprocess.run([sys.executable, score, "--cmd", cmd, "--jobs", str(args.jobs),
                        "--timeout", str(args.timeout), "--quiet", "--json-out", json_out,
                        "--suite", *args.suite],
                       check=True, stdout=subprocess.DEVNULL, env=env)
    shutil.rmtree(cache, ignore_errors=True)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"racedar {subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True).stdout.strip()}, "
          f"--jobs {args.jobs}, {'warm' if args.warm else 'cold'} caches; load average at the end: {load}; results: {out}")
    print()
    with open(out) as f:
        tables(json.load(f), args.corpus)


if __name__ == "__main__":
    main()
