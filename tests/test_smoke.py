"""A first look: the binary runs a script, and reports what it was asked to."""
from conftest import run


def test_version_and_help():
    r = run(["--version"])
    assert r.status == 0 and r.out.startswith("leash ")
    r = run(["--help"])
    assert r.status == 0 and "--max-steps" in r.out


def test_runs_inline_code(script):
    r = script('print("hello", 1 + 2)')
    assert (r.status, r.out) == (0, "hello 3\n")
