"""The compiled core against the tree evaluator's recorded verdicts (scripts/oracle.py,
tests/oracle.json): the examples, the stdlib test scripts, the benchmark programs (work
too) and 400 generated place-write programs (work and peak frame storage too) give the
exit status, output, diagnostics and steps recorded when both cores ran them and agreed.
The case files are held to the same record by tests/test_cases.py."""
import sys

import pytest

from conftest import LEASH, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import oracle  # noqa: E402

RECORDED = oracle.load()
PROGRAMS = {k: f for k, f in oracle.programs().items() if not k.startswith(("case:", "places:"))}


def check(key, make):
    got = make()(str(LEASH), oracle.clean_env())
    d = oracle.difference(key, got, RECORDED.get(key))
    assert d is None, d


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_program_as_recorded(key):
    check(key, PROGRAMS[key])


@pytest.mark.parametrize("block", range(4))
def test_places_as_recorded(block):
    progs = oracle.programs()
    for seed in range(block * 100, block * 100 + 100):
        key = f"places:{seed}"
        assert key in progs
        check(key, progs[key])


def test_every_recorded_program_is_still_run():
    """A program removed from the test tree leaves its record behind: drop it
    (`scripts/oracle.py record` rewrites only what it runs), so the file says what is tested."""
    stale = sorted(set(RECORDED) - set(oracle.programs()))
    assert not stale, f"recorded but no longer run: {stale[:20]}"


def test_a_difference_is_reported():
    """The comparison itself: a changed step count and a new program are both named."""
    want = {"status": 0, "steps": 3, "stdout": "x"}
    assert oracle.difference("k", dict(want), want) is None
    d = oracle.difference("k", dict(want, steps=4), want)
    assert "steps: recorded 3, now 4" in d
    assert "not in tests/oracle.json" in oracle.difference("k", want, None)
