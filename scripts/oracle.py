#!/usr/bin/env python3
"""The tree evaluator's verdicts, kept (issue 24): what every Leash program of the test
suite does on the compiled core, recorded in tests/oracle.json and checked by the tests.

While both cores existed, the tree evaluator was the compiled core's oracle: every case
file, example, stdlib test script, benchmark program and 400 generated place-write
programs ran on both, which had to agree on exit status, stdout, stderr, diagnostics,
steps and work. The tree evaluator is gone (fourteenth session, WORKLOG); its verdicts
are not. This file was recorded from both cores at the commit before the deletion, with
every program checked to agree (`record --both`), and the tests hold the compiled core
to it:

- tests/test_cases.py: each case file's exit status, steps, diagnostics (all their
  fields) and output, beside the case's own `# expect` lines;
- tests/test_oracle.py: the examples, the stdlib test scripts, the benchmark programs
  (work too) and the place-write programs (work and peak frame storage too).

A deliberate change of what a program does (a new message, a work rule changed, a case
edited or added) is recorded again from the current build, then reviewed with
`git diff tests/oracle.json`:

    python3 scripts/oracle.py record [--leash BIN] [KEY-PREFIX ...]

Steps are SPEC 8's contract: a step count that changes is a defect, not a thing to
record, unless the SPEC changed.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT / "tests" / "oracle.json"
CASES = ROOT / "tests" / "cases"

# The benchmark programs, at sizes the test suite can afford (each well under a second).
BENCH = ("fib", "loop", "queens", "sieve", "towers", "permute", "bounce", "list", "storage",
         "richards", "fannkuch", "binarytrees", "map", "json")
BENCH_FLAGS = ["--max-work", "10000000000000", "--max-steps", "1000000000"]


def digest(b):
    if isinstance(b, str):
        b = b.encode()
    return hashlib.sha256(b).hexdigest()[:16]


def observe(argv, cwd, stdin=b"", env=None, stats=("steps",)):
    """Run leash (`argv[0]`) with `--report`; what the oracle keeps of the run."""
    with tempfile.TemporaryDirectory() as tmp:
        rep = Path(tmp) / "report.json"
        p = subprocess.run([argv[0], "--report", str(rep), *argv[1:]], input=stdin, capture_output=True,
                           cwd=cwd, env=env, timeout=300)
        doc = json.loads(rep.read_text()) if rep.exists() else None
    obs = {"status": p.returncode, "stdout": digest(p.stdout), "stderr": digest(p.stderr)}
    if doc is None:
        obs["report"] = None
        return obs
    obs["diagnostics"] = digest(json.dumps(doc.get("diagnostics", []), sort_keys=True))
    for k in stats:
        obs[k] = doc["stats"][k]
    return obs


def clean_env(core=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEASH_")}
    if core:
        env["LEASH_CORE"] = core
    return env


# ---------------------------------------------------------------------------
# The programs
# ---------------------------------------------------------------------------


def case_observer(path):
    """A case file as tests/test_cases.py runs it (its flags, arguments and stdin)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_cases import Case  # noqa: E402  (the runner's own parser)

    case = Case(path)
    stdin = "".join(case.stdin).encode()

    def run(leash, env):
        argv = [leash, "--error-format", "json", *case.flags, case.path.name, *case.args]
        return observe(argv, case.path.parent, stdin, env)

    return run


def program_observer(path, flags=(), stats=("steps",)):
    def run(leash, env):
        with tempfile.TemporaryDirectory() as tmp:
            # (from a copy: a script may write beside itself)
            copy = Path(tmp) / path.name
            copy.write_bytes(path.read_bytes())
            return observe([leash, "--error-format", "json", *flags, copy.name], tmp, b"", env, stats)

    return run


# Places (`PLACE = v`, `PLACE op= v`, place builtins): random programs of place writes over
# nested maps and lists, with constant, variable, computed and unset keys, a key changed
# by a call evaluated after it, shared containers and values of every kind, each write
# in a `try` (and some in a loop). The compiled core reads a place's keys where they are
# and changes numbers in place (WORKLOG 2026-12-05, eleventh session).
_PLACE_SETUP = [
    'm = {x: 1, y: 2.5, s: "a", l: [1, 2, [3, 4]], d: {p: 1, q: [5]}}',
    'a = [1, 2, {v: 3, w: [6, 7]}, [8, 9]]',
    "i = 0",
    "j = 1",
    'k = "x"',
    "fn f()\n  global i\n  i = (i + 1) % 3\n  return 1\nend",
    "if false\n  u = 1\nend",
]
_PLACE_KEYS = {
    "m": [".x", ".y", ".s", ".l", ".d", "[k]", ".zz", ".d.p", ".d.q[0]", ".l[2][1]", ".l[i]",
          ".l[j]", ".l[f()]", "[u]"],
    "a": ["[0]", "[1]", "[i]", "[j]", "[2].v", "[2].w[1]", "[3][i]", "[f()]", "[2].w[j]",
          "[5]", "[u]", "[-1][0]"],
}
_PLACE_VALUES = ["1", "2.5", "i", "j", "f()", '"s"', "[1]", "nil", "u", "m.x", "a[0]", "1e308",
                 "0 - i"]
PLACE_SEEDS = range(400)


def place_program(seed):
    r = random.Random(seed)
    lines = list(_PLACE_SETUP)
    for _ in range(r.randint(3, 12)):
        root = r.choice(["m", "a"])
        place = root + r.choice(_PLACE_KEYS[root])
        st = f"{place} {r.choice(['=', '+=', '-=', '*=', '..='])} {r.choice(_PLACE_VALUES)}"
        if r.random() < 0.15:
            st = f"push({place}, {r.choice(_PLACE_VALUES)})"
        if r.random() < 0.15:
            st = f"b = {root}\n{st}\nprint(b)"
        body = st.replace("\n", "\n  ")
        lines.append(f"try\n  {body}\ncatch e\n  print(e.kind, e.line, e.message)\nend")
        if r.random() < 0.2:
            body = st.replace("\n", "\n    ")
            lines.append(f"try\n  for t = 1 to 3\n    {body}\n  end\ncatch e\n  print(e.kind, e.line)\nend")
    lines.append("print(m, a, i, j)")
    return "\n".join(lines) + "\n"


def place_observer(seed):
    def run(leash, env):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "p.lsh").write_text(place_program(seed))
            return observe([leash, "--max-steps", "100000", "p.lsh"], tmp, b"", env,
                           ("steps", "work", "peak_frame_bytes"))

    return run


def programs():
    """Every program the oracle covers: key -> how to run it."""
    out = {}
    for p in sorted(CASES.rglob("*.lsh")):
        out["case:" + p.relative_to(CASES).as_posix()] = lambda p=p: case_observer(p)
    for p in sorted(ROOT.glob("examples/*.lsh")) + sorted(ROOT.glob("tests/lsh/stdlib/*_test.lsh")):
        out["program:" + p.relative_to(ROOT).as_posix()] = lambda p=p: program_observer(p)
    for w in BENCH:
        p = ROOT / "bench" / "leash" / f"{w}.lsh"
        out["program:" + p.relative_to(ROOT).as_posix()] = (
            lambda p=p: program_observer(p, BENCH_FLAGS, ("steps", "work")))
    for s in PLACE_SEEDS:
        out[f"places:{s}"] = lambda s=s: place_observer(s)
    return out


# ---------------------------------------------------------------------------
# Checking and recording
# ---------------------------------------------------------------------------


def load():
    return json.loads(ORACLE.read_text()) if ORACLE.exists() else {}


def difference(key, got, want):
    """None when `got` is what the oracle recorded for `key`, else what differs."""
    if want is None:
        return f"{key}: not in tests/oracle.json (a new program: `python3 scripts/oracle.py record {key}`)"
    rows = [f"  {k}: recorded {want.get(k)!r}, now {got.get(k)!r}" for k in sorted(set(want) | set(got))
            if want.get(k) != got.get(k)]
    if not rows:
        return None
    return (f"{key} differs from what tests/oracle.json recorded (the tree evaluator's verdict; "
            "scripts/oracle.py says when to record again):\n" + "\n".join(rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["record", "check"])
    ap.add_argument("--leash", default=str(ROOT / "target" / "release" / "leash"))
    ap.add_argument("--both", action="store_true",
                    help="run each program under LEASH_CORE=tree and =vm and record only when they agree "
                         "(how the record was made; meaningful only for a build from before the fourteenth "
                         "session, which had the tree evaluator)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("prefixes", nargs="*", help="only the keys starting with one of these")
    o = ap.parse_args()
    leash = str(Path(o.leash).resolve())
    todo = {k: f for k, f in programs().items() if not o.prefixes or any(k.startswith(p) for p in o.prefixes)}
    oracle = load()

    def one(item):
        key, make = item
        run = make()
        if o.both:
            a, b = run(leash, clean_env("tree")), run(leash, clean_env("vm"))
            return key, b, (None if a == b else f"{key}: the cores disagree\n  tree: {a}\n  vm:   {b}")
        got = run(leash, clean_env())
        return key, got, None

    bad = []
    with concurrent.futures.ThreadPoolExecutor(o.jobs) as ex:
        for key, got, problem in ex.map(one, sorted(todo.items())):
            if o.what == "record":
                if problem:
                    bad.append(problem)
                else:
                    oracle[key] = got
            else:
                d = difference(key, got, oracle.get(key))
                if d:
                    bad.append(d)
    if o.what == "record":
        # (one program to a line, so that a change reads as a diff of its lines)
        rows = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(oracle.items())]
        ORACLE.write_text("{\n" + ",\n".join(rows) + "\n}\n")
    for b in bad:
        print(b)
    print(f"{len(todo) - len(bad)} of {len(todo)} programs {'recorded' if o.what == 'record' else 'as recorded'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
