#!/usr/bin/env python3
"""Differential run of the two evaluators (issue 24): every Leash program given (files or
directories, searched for *.lsh) runs under LEASH_CORE=tree (the tree evaluator, the
oracle) and LEASH_CORE=vm (the compiled core, the default), and the two runs must agree on stdout,
stderr (diagnostics), exit status, and the steps and work of `--stats`.

    python3 scripts/core-diff.py [--leash BIN] [--stdin FILE] [--] PATH... [-- ARGS...]

Exit 1 on any difference (each printed with both sides). The test suite runs the same
comparison over tests/cases (LEASH_DIFF=1 tests/test_cases.py, run by scripts/test.sh) and over
bench/leash, examples and stdlib (tests/test_core_diff.py).
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(leash, path, core, stdin, args, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEASH")}
    env["LEASH_CORE"] = core
    cmd = [leash, "--stats", *extra, str(path), *args]
    p = subprocess.run(
        cmd, input=stdin, capture_output=True, env=env, timeout=300, cwd=path.parent
    )
    err = p.stderr.decode("utf-8", "replace")
    stats = None
    # `--stats` prints one JSON line last on stderr.
    lines = err.rstrip("\n").split("\n")
    if lines and lines[-1].startswith('{"stats"'):
        stats = json.loads(lines[-1])["stats"]
        err = "\n".join(lines[:-1])
    return {
        "stdout": p.stdout.decode("utf-8", "replace"),
        "stderr": err,
        "exit": p.returncode,
        "steps": stats and stats["steps"],
        "work": stats and stats["work"],
    }


def compare(leash, path, stdin=b"", args=(), extra=()):
    a = run(leash, path, "tree", stdin, args, extra)
    b = run(leash, path, "vm", stdin, args, extra)
    return [(k, a[k], b[k]) for k in a if a[k] != b[k]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leash", default=str(ROOT / "target/release/leash"))
    ap.add_argument("--stdin", help="file fed to every program's stdin")
    ap.add_argument("--flag", action="append", default=[], help="extra leash flag")
    ap.add_argument("paths", nargs="+")
    o = ap.parse_args()
    o.leash = str(Path(o.leash).resolve())
    stdin = Path(o.stdin).read_bytes() if o.stdin else b""
    files = []
    for p in map(Path, o.paths):
        files += sorted(p.rglob("*.lsh")) if p.is_dir() else [p]
    bad = 0
    for f in files:
        diffs = compare(o.leash, f.resolve(), stdin, (), o.flag)
        if diffs:
            bad += 1
            print(f"DIFFER {f}")
            for k, t, v in diffs:
                print(f"  {k}:\n    tree: {str(t)[:400]!r}\n    vm:   {str(v)[:400]!r}")
        else:
            print(f"same   {f}")
    print(f"{len(files) - bad} of {len(files)} programs agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
