"""Issue 23 (hardening, round 3): a regression test per finding of the third hostile
review, in its reproducer's shape, under the default flags and with `--max-time 1`.
(The CGI code-execution hole is tests/test_cgi_attack.py; SQLite is test_db_leash.py.)"""
import resource
import subprocess

import pytest

from conftest import LEASH, lines_of, run

MIB = 1 << 20


def capped(args, input=b"", mem=1 << 30, cpu=60, timeout=90, cwd=None):
    """Run leash with its address space and CPU capped (a failing test cannot take the
    machine down)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    p = subprocess.run(
        [str(LEASH), *map(str, args)], input=input, capture_output=True, timeout=timeout, preexec_fn=limit, cwd=cwd
    )
    return p


# ---------------------------------------------------------------------------
# Finding 6: an idiom node indexed `get`'s arguments before arity was checked (exit 70)
# ---------------------------------------------------------------------------

GET_SHAPES = [
    "m[k] = get(m) + 1",
    "m[k] = get() + 1",
    "m[k] = get(m, k, 0, 1) + 1",
    "m[k] = get(m) - 1",
    "x = get(m)",
    "x = get()",
    'm["a"] = get(m, "a", 0, 5) + 1',
]


@pytest.mark.parametrize("shape", GET_SHAPES)
def test_get_idiom_with_a_wrong_arity_is_a_load_error(tmp_path, shape):
    p = tmp_path / "t.lsh"
    p.write_text(lines_of("m = {}", 'k = "a"', shape, "print(m)"))
    for args in (["--error-format", "json", p], ["check", "--error-format", "json", p]):
        r = run(args)
        assert r.status == 3, r
        assert r.diag["kind"] == "arity" and r.diag["line"] == 3, r
    r = run(["repl"], input=lines_of("m = {}", 'k = "a"', shape, 'print("still here")'))
    assert r.status != 70 and "internal" not in r.err, r
    assert "still here" in r.out, r


def test_get_idiom_of_the_right_arity_still_counts(ok):
    assert ok(lines_of("m = {}", 'for w in ["a", "b", "a"]', "  m[w] = get(m, w, 0) + 1", "end", "print(m)")) == '{"a":2,"b":1}\n'
