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


@pytest.mark.parametrize("kind,expr", KIND_EXAMPLES)
def test_uncaught_runtime_error_kinds(fails, kind, expr):
    # `never_set` is assigned only on a path not taken: a read is a runtime `name` error
    # (a name assigned nowhere is a load error, SPEC 7).
    r = fails(f'print("before")\nx = {expr}\nprint("after")\nif false\nnever_set = 0\nend', kind, line=2)
    assert r.out == "before\n"
    d = r.diag
    # Every example is raised by an operator, an index or a call: it has a column.
    # (a `name` error may add a `help` line)
    assert set(d) - {"help"} == {"error", "kind", "message", "file", "line", "column"}, d
    assert isinstance(d["column"], int) and d["column"] >= 5, d
    assert d["file"].endswith("t.lsh")
    assert isinstance(d["message"], str) and d["message"]


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


def test_caught_message_matches_diagnostic_message(ok, fails):
    r = fails("x = 1 / 0", "arith")
    caught = ok("try\nx = 1 / 0\ncatch e\nprint(e.message)\nend")
    assert caught == r.diag["message"] + "\n"


def test_throw_message_is_str_of_value(ok):
    code = """try
throw [1, "two", nil]
catch e
print(e.message)
print(e.value[1])
end
try
throw 2.5
catch e
print(e.message, type(e.message))
end"""
    assert ok(code) == '[1,"two",null]\ntwo\n2.5 string\n'


def test_uncaught_throw_of_map_reports_user_kind(fails):
    r = fails('throw {"code": 42}', "user", line=1)
    assert r.diag["message"] == '{"code":42}'


def test_error_inside_function_reports_function_line(fails):
    r = fails("fn f()\n\nreturn [][0]\nend\n\nf()", "index", line=3)


def test_catch_in_caller_gets_inner_line(ok):
    code = "fn f()\nreturn nope\nend\ntry\nf()\ncatch e\nprint(e.kind, e.line)\nend\nif false\nnope = 1\nend"
    assert ok(code) == "name 2\n"


def test_caught_error_in_included_file(tmp_path, ok):
    (tmp_path / "lib.lsh").write_text("fn bad()\nreturn 1 % 0\nend\n")
    code = 'include "lib.lsh"\ntry\nbad()\ncatch e\nprint(e.kind, e.line, ends_with(e.file, "lib.lsh"))\nend'
    assert ok(code) == "arith 2 true\n"


def test_execution_continues_after_catch(ok):
    code = """n = 0
for i = 1 to 5
try
if i % 2 == 0
throw i
end
n += 1
catch e
n += 100
end
end
print(n)"""
    assert ok(code) == "203\n"


def test_error_map_is_an_ordinary_map(ok):
    code = """try
x = {}.missing
catch e
e.extra = 1
m = e
print(m.kind, len(m))
end"""
    assert ok(code) == "key 5\n"


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


def test_output_before_uncaught_error_is_kept(script):
    r = script('write("partial")\neprint("to err")\nx = [][1]\n')
    assert r.status == 1
    assert r.out == "partial"
    assert r.err.startswith("to err\n")


# --- exit statuses ------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,status",
    [("exit()", 0), ("exit(0)", 0), ("exit(1)", 1), ("exit(3)", 3), ("exit(42)", 42), ("exit(255)", 255), ("exit(4.0)", 4)],
)
def test_exit_status(script, call, status):
    r = script(f'print("a")\n{call}\nprint("b")\n')
    assert r.status == status, r
    assert r.out == "a\n"
    assert r.diags == []


@pytest.mark.parametrize("arg,kind", [("256", "value"), ("-1", "value"), ("1.5", "value"), ('"1"', "type"), ("1000", "value"), ("[]", "type")])
def test_exit_bad_status(fails, arg, kind):
    fails(f"exit({arg})", kind)


def test_exit_inside_function_and_try(script):
    code = """fn quit()
try
exit(9)
catch e
print("caught")
end
end
quit()
print("after")"""
    r = script(code)
    assert (r.status, r.out) == (9, "")


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


def test_limit_in_function_called_inside_try_is_not_caught(script):
    code = """fn spin()
while true
end
end
try
spin()
catch e
print("caught")
end"""
    r = script(code, opts=["--max-steps", "500"])
    assert r.status == 4 and r.diag["kind"] == "steps" and r.out == ""


def test_limit_diagnostic_fields(script):
    r = script("x = 1\nwhile true\nx += 1\nend\n", opts=["--max-steps", "100"])
    d = r.diag
    assert d["error"] == "limit" and d["kind"] == "steps"
    assert d["file"].endswith("t.lsh") and d["line"] in (2, 3)
    assert d["message"]


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
