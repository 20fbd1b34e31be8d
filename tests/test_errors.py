"""Runtime errors and diagnostics (SPEC 7): kinds, try/catch maps, exit statuses, limits."""
import json

import pytest

from conftest import run

# One reachable example of every runtime kind the core can raise.
KIND_EXAMPLES = [
    ("type", '1 + "a"'),
    ("type", "len(5)"),
    ("value", "[1, 2][0.5]"),
    ("value", 'repeat("a", -1)'),
    ("index", "[1][3]"),
    ("key", '{"a": 1}.b'),
    ("name", "never_set + 1"),
    ("arith", "1 / 0"),
    ("parse", 'num("12abc")'),
    ("assert", "assert(false)"),
]


@pytest.mark.parametrize("kind,expr", KIND_EXAMPLES + [("user", '"thrown"')])
def test_caught_error_map_fields(ok, kind, expr):
    stmt = f"throw {expr}" if kind == "user" else f"x = {expr}"
    code = f"""try

{stmt}
catch e
print(e.kind)
print(e.line)
print(type(e.message), len(e.message) > 0)
print(e.file == FILE or ends_with(e.file, "t.lsh"))
print(keys(e))
end
if false
never_set = 0
end"""
    out = ok(code.replace("FILE", '"t.lsh"')).splitlines()
    assert out[0] == kind
    assert out[1] == "3"
    assert out[2] == "string true"
    assert out[3] == "true"
    ks = json.loads(out[4])
    if kind == "user":
        assert sorted(ks) == ["file", "kind", "line", "message", "value"]
    else:
        assert sorted(ks) == ["file", "kind", "line", "message"]


def test_caught_error_in_included_file(tmp_path, ok):
    (tmp_path / "lib.lsh").write_text("fn bad()\nreturn 1 % 0\nend\n")
    code = 'include "lib.lsh"\ntry\nbad()\ncatch e\nprint(e.kind, e.line, ends_with(e.file, "lib.lsh"))\nend'
    assert ok(code) == "arith 2 true\n"


def test_text_diagnostic_format(script):
    r = script("x = 1\nprint(1 / 0)\n", opts=["--error-format", "text"])
    assert r.status == 1
    line = r.err.splitlines()[0]
    assert line.endswith("t.lsh:2:9: runtime error [arith]: division by zero"), line


def test_text_diagnostic_for_throw(script):
    r = script('throw "boom"\n', opts=["--error-format", "text"])
    assert r.status == 1
    assert r.err.splitlines()[0].endswith("t.lsh:1: runtime error [user]: boom"), r.err


def test_text_diagnostic_for_load_error(script):
    r = script("x = 1\nif true\n", opts=["--error-format", "text"])
    assert r.status == 3
    assert "load error [structure]" in r.err and "t.lsh:" in r.err


def test_text_diagnostic_for_limit(script):
    r = script("while true\nend\n", opts=["--error-format", "text", "--max-steps", "50"])
    assert r.status == 4
    assert "t.lsh:1: limit error [steps]: " in r.err, r.err


# --- exit statuses ------------------------------------------------------------------


def test_exit_flushes_output(script):
    r = script('for i = 1 to 1000\nwrite("xxxxxxxxxx")\nend\nexit(5)\n')
    assert r.status == 5 and len(r.out) == 10000


# --- limits cannot be caught ---------------------------------------------------------


@pytest.mark.parametrize(
    "body,kind,opts",
    [
        ("while true\nend", "steps", ["--max-steps", "1000"]),
        ('s = "x"\nwhile true\ns = s .. s\nend', "string", []),
        ("l = []\nwhile true\npush(l, 1)\nend", "list", ["--max-steps", "100000"]),
        ('m = {}\nfor i = 0 to 20000\nm["k" .. i] = i\nend', "map", []),
        ('s = repeat("y", 1048576)\nwhile true\nwrite(s)\nend', "stdout", []),
    ],
)
def test_limits_are_not_catchable(script, body, kind, opts):
    indented = body
    code = f"""try
{indented}
catch e
print("caught", e.kind)
end
print("after")
"""
    r = script(code, opts=opts)
    assert r.status == 4, r
    assert r.diag["error"] == "limit" and r.diag["kind"] == kind, r
    assert "caught" not in r.out and "after" not in r.out


def test_internal_error_is_reported_with_status_70():
    # A panic anywhere becomes an `internal` diagnostic and exit 70 (the switch makes
    # the interpreter panic on purpose; no input can).
    import os
    env = dict(os.environ, LEASH_TEST_INTERNAL_ERROR="1")
    r = run(["--error-format", "json", "--stats", "-e", "print(1)"], env=env)
    assert r.status == 70, r
    assert r.out == ""
    assert (r.diag["error"], r.diag["kind"]) == ("internal", "internal"), r
    assert "deliberate panic" in r.diag["message"]
    assert r.stats["steps"] == 0
    r = run(["-e", "print(1)"], env=env)
    assert r.status == 70 and "internal error" in r.err, r
