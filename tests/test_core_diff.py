"""The compiled core (LEASH_CORE=vm) and the tree evaluator (the oracle) agree on the
benchmark programs, the examples and the stdlib modules: stdout, diagnostics, exit
status, steps and work (scripts/core-diff.py). Every case file is compared by
`LEASH_DIFF=1 pytest tests/test_cases.py` (scripts/test.sh runs it)."""
import pathlib
import subprocess
import sys

import pytest

from conftest import LEASH, ROOT

PROGRAMS = sorted(
    [p for d in ("examples", "stdlib") for p in (ROOT / d).glob("*.lsh")]
    + [
        ROOT / "bench/leash" / f"{w}.lsh"
        for w in ("fib", "loop", "queens", "sieve", "towers", "permute", "bounce", "list",
                  "storage", "richards", "fannkuch", "binarytrees", "map", "json")
    ]
)


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_both_cores_agree(prog):
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts/core-diff.py"), "--leash", str(LEASH),
         "--flag=--max-work=10000000000000", "--flag=--max-steps=1000000000", str(prog)],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 of 1 programs agree" in r.stdout, r.stdout


# Places (`PLACE = v`, `PLACE op= v`, place builtins): random programs of place writes over
# nested maps and lists, with constant, variable, computed and unset keys, a key changed
# by a call evaluated after it, shared containers and values of every kind, each write
# in a `try` (and some in a loop). The compiled core reads a place's keys where they are
# and changes numbers in place (WORKLOG 2026-12-05, eleventh session); the tree evaluator
# is the oracle: stdout, diagnostics, exit status, steps, work and peak frame storage.
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


def _place_program(seed):
    import random

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


@pytest.mark.parametrize("block", range(4))
def test_both_cores_agree_on_places(block, tmp_path):
    import json
    import os

    for seed in range(block * 100, block * 100 + 100):
        src = tmp_path / "p.lsh"
        src.write_text(_place_program(seed))
        seen = []
        for core in ("tree", "vm"):
            rep = tmp_path / f"r.{core}.json"
            p = subprocess.run([str(LEASH), "--report", str(rep), "--max-steps", "100000", str(src)],
                               capture_output=True, timeout=60, env=dict(os.environ, LEASH_CORE=core))
            doc = json.loads(rep.read_text())
            st = doc["stats"]
            seen.append((p.returncode, p.stdout, p.stderr, doc["diagnostics"], st["steps"], st["work"],
                         st["peak_frame_bytes"]))
        assert seen[0] == seen[1], f"seed {seed}:\n{src.read_text()}\ntree: {seen[0]}\nvm:   {seen[1]}"
