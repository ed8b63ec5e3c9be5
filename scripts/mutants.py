#!/usr/bin/env python3
"""Robustness run of racedar over the corpus and over generated mutants of it.

Runs `racedar check --format json` on every program of the corpus (all suites of
../shared/corpus/manifest.jsonl, with each task's include directories and data model) and on
N deterministic mutants of corpus programs (deleted, duplicated and swapped lines; deleted,
swapped and replaced tokens; truncations; random bytes), each with a time bound, and counts how
the runs end. Every run must end with exit code 0, 1 or 2: a panic (101), another code, a
signal or a timeout is a bug, and the script exits 1 when it sees one (the offending inputs are
kept in the work directory).

Mutants are written to a temporary work directory (never into the project) next to a copy of
their original's directory path, so relative includes still resolve.

Usage:
    scripts/mutants.py [--binary target/release/racedar] [--corpus ../shared/corpus]
                       [--mutants 1000] [--seed 1] [--timeout 60] [--jobs 2] [--keep DIR]
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

VOCABULARY = [
    "(", ")", "{", "}", "[", "]", ";", ",", "*", "&", "=", "==", "->", ".", "...", "#", '"',
    "'", "/*", "//", "\\", "int", "void", "struct", "union", "enum", "typedef", "static",
    "extern", "const", "volatile", "_Atomic", "sizeof", "return", "goto", "case", "default",
    "switch", "while", "for", "do", "if", "else", "break", "continue", "asm", "__asm__",
    "__attribute__((packed))", "__thread", "_Thread_local", "__int128", "__typeof__(x)",
    "({ 0; })", "pthread_create", "pthread_join", "pthread_mutex_lock", "pthread_mutex_unlock",
    "malloc", "free", "setjmp", "longjmp", "NULL", "0", "-1", "2147483648",
    "0x7fffffffffffffff", "1e308", "'\\0'", '"s"', "main", "L", "__VERIFIER_atomic_begin",
]

TOKEN = re.compile(rb"[A-Za-z0-9_]+|\S")


def mutate(src: bytes, kind: int, rng: random.Random) -> bytes:
    """One mutant of `src`; `kind` (0-9) picks the mutation."""
    lines = src.splitlines(keepends=True) or [b""]
    toks = [(m.start(), m.end()) for m in TOKEN.finditer(src)]
    if kind == 0:  # delete a line
        k = rng.randrange(len(lines))
        return b"".join(lines[:k] + lines[k + 1:])
    if kind == 1:  # duplicate a line
        k = rng.randrange(len(lines))
        return b"".join(lines[:k + 1] + lines[k:])
    if kind == 2:  # swap two lines
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
        return b"".join(lines)
    if kind == 3 and len(toks) > 1:  # swap two adjacent tokens
        k = rng.randrange(len(toks) - 1)
        (a0, a1), (b0, b1) = toks[k], toks[k + 1]
        return src[:a0] + src[b0:b1] + src[a1:b0] + src[a0:a1] + src[b1:]
    if kind == 4 and toks:  # delete a token
        a, b = rng.choice(toks)
        return src[:a] + src[b:]
    if kind == 5 and toks:  # replace a token
        a, b = rng.choice(toks)
        if rng.randrange(2):
            c, d = rng.choice(toks)
            word = src[c:d]
        else:
            word = rng.choice(VOCABULARY).encode()
        return src[:a] + word + src[b:]
    if kind == 6:  # truncate
        return src[: rng.randrange(max(len(src), 1))]
    if kind == 7:  # insert random bytes
        at = rng.randrange(len(src) + 1)
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        return src[:at] + junk + src[at:]
    if kind == 8:  # overwrite a few bytes with printable ASCII
        out = bytearray(src)
        for _ in range(rng.randrange(1, 5)):
            if out:
                out[rng.randrange(len(out))] = rng.randrange(32, 127)
        return bytes(out)
    a = rng.randrange(max(len(src), 1))  # cut a slice out
    b = min(a + rng.randrange(200), len(src))
    return src[:a] + src[b:]


def tasks(corpus: str):
    seen = set()
    out = []
    with open(os.path.join(corpus, "manifest.jsonl")) as f:
        for line in f:
            if not line.strip():
                continue
            v = json.loads(line)
            if v["path"] in seen:
                continue
            seen.add(v["path"])
            out.append(
                {
                    "path": os.path.join(corpus, v["path"]),
                    "includes": [os.path.join(corpus, d) for d in v.get("include_dirs") or []],
                    "data_model": v.get("data_model") or "LP64",
                    "suite": v.get("suite", ""),
                }
            )
    return out


def run(binary: str, task: dict, path: str, timeout: float):
    cmd = [binary, "check", "--format", "json", "--data-model", task["data_model"]]
    for d in task["includes"]:
        cmd += ["-I", d]
    cmd.append(path)
    start = time.monotonic()
    try:
        p = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start, ""
    took = time.monotonic() - start
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0:
        return f"signal {-p.returncode}", took, err
    if p.returncode == 2:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        if ": error: " not in last:
            return "exit 2 without a one-line error", took, err
    return f"exit {p.returncode}", took, err


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(root, "target/release/racedar"))
    ap.add_argument("--corpus", default=os.path.join(root, "../shared/corpus"))
    ap.add_argument("--mutants", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-originals", action="store_true", help="run only the mutants")
    ap.add_argument("--keep", help="work directory to keep (default: a temporary one)")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.corpus, "manifest.jsonl")):
        print(f"no corpus at {args.corpus}", file=sys.stderr)
        return 2
    work = args.keep or tempfile.mkdtemp(prefix="racedar-mutants-")
    os.makedirs(work, exist_ok=True)
    all_tasks = tasks(args.corpus)
    rng = random.Random(args.seed)
    jobs = []
    if not args.no_originals:
        jobs += [("corpus", t, t["path"]) for t in all_tasks]
    # Mutants of the small programs (realworld ones are large and slow to analyse).
    small = [t for t in all_tasks if t["suite"] != "realworld"]
    for n in range(args.mutants):
        t = rng.choice(small)
        with open(t["path"], "rb") as f:
            src = f.read()
        kind = n % 10
        rel = os.path.relpath(os.path.dirname(t["path"]), args.corpus)
        d = os.path.join(work, rel)
        os.makedirs(d, exist_ok=True)
        base, ext = os.path.splitext(os.path.basename(t["path"]))
        path = os.path.join(d, f"{base}.m{n:04d}k{kind}{ext}")
        with open(path, "wb") as f:
            f.write(mutate(src, kind, rng))
        jobs.append(("mutant", t, path))
    counts = {}
    bad = []
    slowest = (0.0, "")
    with ThreadPoolExecutor(max_workers=args.jobs) as ex:
        results = ex.map(lambda j: (j, run(args.binary, j[1], j[2], args.timeout)), jobs)
        for (kind, _, path), (end, took, err) in results:
            counts[(kind, end)] = counts.get((kind, end), 0) + 1
            if took > slowest[0]:
                slowest = (took, path)
            if end not in ("exit 0", "exit 1", "exit 2"):
                bad.append((path, end, err.strip().splitlines()[-3:]))
    for (kind, end), n in sorted(counts.items()):
        print(f"{kind:7} {end:32} {n:5}")
    print(f"slowest run: {slowest[0]:.1f} s ({slowest[1]})")
    for path, end, err in bad:
        print(f"BUG: {path}: {end}: {' | '.join(err)}")
    if not args.keep:
        if bad:
            print(f"offending inputs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
