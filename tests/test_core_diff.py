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
