"""Diagnostics that teach (SPEC 7, issue 13): columns, the source line with a caret,
`help:` lines for the mistakes people bring from other languages, source order, colour
only on a terminal, and the names checked before main runs.

The golden files (text diagnostics with their programs) and the `help:` lines of those
programs are case files now: tests/cases/diagnostics/NAME.lsh and NAME.golden, run by
tests/test_cases.py (tests/cases/README.md says how to regenerate them).
"""
import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from conftest import LEASH, run

CASES = Path(__file__).parent / "cases" / "diagnostics"


def diagnose(tmp_path, code, *opts):
    (tmp_path / "t.lsh").write_text(code)
    return run([*opts, "t.lsh"], cwd=tmp_path)


def col_of(line, needle, nth=0):
    """The 1-based character column of the nth occurrence of `needle` in `line`."""
    i = -1
    for _ in range(nth + 1):
        i = line.index(needle, i + 1)
    return i + 1


@pytest.mark.parametrize(
    "code,lineno,needle,kind",
    [
        ("if x then\nend\n", 1, "then", "syntax"),
        ("x = 1 // a comment\n", 1, "//", "syntax"),  # `x = 1 // c` is floored division now (round 3)
        ("x = (1 + 2\n", 1, "(", "syntax"),
        ("x = [1, (2]\n", 1, "]", "syntax"),
        ("x = 1\ny = x === 1\n", 2, "===", "syntax"),
        ("x = 1\ny = !x\n", 2, "!", "syntax"),
        ('s = "héllo wörld" .. nope_x\n', 1, "nope_x", "name"),
        ("zz = 1\nprint(lenn(zz))\n", 2, "lenn", "name"),
        ("x = 1\nx = math.nope(1)\n", 2, "math.nope", "name"),
        ("x = len(1, 2)\n", 1, "len", "arity"),
        ("   end\n", 1, "end", "structure"),
        ("x = 1\nif x\n", 2, "if", "structure"),
        ("x = \"a\\q\"\n", 1, '"', "syntax"),
    ],
)
def test_load_errors_have_columns(tmp_path, code, lineno, needle, kind):
    r = diagnose(tmp_path, code, "--error-format", "json")
    assert r.status == 3, r
    d = r.diag
    assert (d["kind"], d["line"]) == (kind, lineno), d
    assert d["column"] == col_of(code.split("\n")[lineno - 1], needle), d


@pytest.mark.parametrize(
    "code,needle,kind",
    [
        ('x = "é" .. (1 / 0)', "/", "arith"),
        ('u = 1\nx = "ü" + u', "+", "type"),
        ('x = ["é", "è"]\ny = "àà" .. x[7]', "[", "index"),
        ('x = [1]\ny = "ééé" .. x[0.5]', "[", "value"),
        ('m = {"é": 1}\ny = "éé" .. m.nope', "nope", "key"),
        ('y = "ü" .. len(5)', "len", "type"),
        ('y = "ü" .. num("x")', "num", "parse"),
        ('y = "ü" .. json.parse("{")', "json.parse", "parse"),
        ("x = [1]\nfn f(a)\n  return a[3]\nend\ny = f(x)", "[", "index"),
        ("y = -\"é\"", "-", "type"),
        ("l = []\npush(l, 1)\nx = pop(l)\nx = \"é\" .. pop(l)", "pop", "index"),
    ],
)
def test_runtime_errors_have_columns_in_characters(tmp_path, code, needle, kind):
    r = diagnose(tmp_path, code, "--error-format", "json")
    assert r.status == 1, r
    d = r.diag
    line = code.split("\n")[d["line"] - 1]
    assert d["kind"] == kind, d
    assert d["column"] == col_of(line, needle), (d, line)


def test_caret_under_the_spot_after_multibyte_characters(tmp_path):
    code = 'menu = {"café": 1}\nprint("crème brûlée: " .. menu.the)\n'
    r = diagnose(tmp_path, code)
    assert r.status == 1, r
    head, *rest = r.err.splitlines()
    line = code.split("\n")[1]
    col = col_of(line, "the")
    assert head.endswith(f"t.lsh:2:{col}: runtime error [key]: key \"the\" not found"), head
    src = next(x for x in rest if x.endswith(line))
    caret = next(x for x in rest if "^" in x)
    bar = src.index("| ") + 2
    # The caret stands under the character at the column, as many carets as it is wide.
    assert caret.index("^") - bar == col - 1, (src, caret)
    assert caret.count("^") == len("the"), caret


def test_load_errors_in_source_order(tmp_path):
    r = diagnose(tmp_path, (CASES / "source_order.lsh").read_text(), "--error-format", "json")
    assert r.status == 3
    lines = [d["line"] for d in r.diags]
    assert lines == sorted(lines) and lines[0] == 1 and 3 in lines, r.diags
    # Included files' errors come with their own lines, each file in order.
    (tmp_path / "lib.lsh").write_text("a = nope_1\nb = (\n")
    r = diagnose(tmp_path, 'include "lib.lsh"\nc = nope_2\nd = )\n', "--error-format", "json")
    by_file = {}
    for d in r.diags:
        by_file.setdefault(d["file"].rsplit("/", 1)[-1], []).append(d["line"])
    assert by_file["lib.lsh"] == sorted(by_file["lib.lsh"]) and by_file["t.lsh"] == sorted(by_file["t.lsh"])


def test_no_colour_when_stderr_is_not_a_terminal(tmp_path):
    r = diagnose(tmp_path, "if x then\nend\n")
    assert "\x1b[" not in r.err and "^" in r.err, r.err


def _on_a_terminal(tmp_path, code, env):
    (tmp_path / "t.lsh").write_text(code)
    master, slave = pty.openpty()
    try:
        p = subprocess.run([str(LEASH), "t.lsh"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=slave, env=env, timeout=30)
        os.close(slave)
        slave = None
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        return p.returncode, out.decode("utf-8", "replace")
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)


def test_colour_only_on_a_terminal_and_without_no_color(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    status, err = _on_a_terminal(tmp_path, "if x then\nend\n", env)
    assert status == 3 and "\x1b[" in err, err
    status, err = _on_a_terminal(tmp_path, "if x then\nend\n", {**env, "NO_COLOR": "1"})
    assert status == 3 and "\x1b[" not in err and "^" in err, err
    # NO_COLOR with any value, even empty, turns colour off.
    status, err = _on_a_terminal(tmp_path, "if x then\nend\n", {**env, "NO_COLOR": ""})
    assert status == 3 and "\x1b[" not in err, err


# ---------------------------------------------------------------------------
# Names checked before main (SPEC 7)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code,line",
    [
        ("print(never)", 1),
        ("x = 1\ny = x + nothing", 2),
        ("fn f()\n  return ghost\nend", 2),
        ("fn f(a)\n  return a + b\nend\nprint(f(1))", 2),
        ("for i = 1 to 2\nend\nprint(j)", 3),
        ("push(items, 1)", 1),
        ("m.k = 1", 1),
        ('s = "${absent}"', 1),
        ("fn f()\n  global g\n  push(g, 1)\nend", 3),
    ],
)
def test_read_of_a_name_assigned_nowhere_is_a_load_error(fails, code, line):
    r = fails(code, "name", status=3, line=line)
    assert "never assigned" in r.diag["message"], r.diag
    assert "column" in r.diag


def test_nothing_runs_when_a_name_is_assigned_nowhere(script):
    r = script('print("started")\nfn never_called()\n  return ghost\nend\n')
    assert (r.status, r.out) == (3, ""), r


@pytest.mark.parametrize(
    "code",
    [
        # A global assigned in a function that declares it.
        "fn init()\n  global cfg\n  cfg = 1\nend\ninit()\nprint(cfg)",
        # Parameters, for and catch variables, compound assignment.
        "fn f(a)\n  push(a, 1)\n  return a\nend\nprint(f([]))",
        "for k, v in {a: 1}\n  print(k, v)\nend",
        'try\n  throw "x"\ncatch e\n  print(e.kind)\nend',
        "fn f()\n  xs = []\n  push(xs, 1)\n  xs[0] = 2\n  return xs\nend\nprint(f())",
        "counts = {}\nfn tally(w)\n  global counts\n  counts[w] = 1\nend\ntally(\"a\")\nprint(counts)",
        # A global read in a function, assigned in main after the function.
        "fn f()\n  return late\nend\nlate = 3\nprint(f())",
    ],
)
def test_names_that_are_assigned_somewhere_load(ok, code):
    ok(code)


def test_element_change_without_global_names_the_fix(fails):
    r = fails("counts = {}\nfn tally(w)\n  counts[w] = 1\nend\ntally(\"a\")", "name", status=3, line=3)
    assert r.diag["help"] == ["add `global counts` at the top of `tally` to change the global `counts`"], r.diag
    r = fails("seen = []\nfn mark(x)\n  push(seen, x)\nend", "name", status=3, line=3)
    assert "global seen" in r.diag["help"][0]
    # A parameter may be changed: it is the function's own copy.
    r = fails("fn f(xs)\n  push(ys, 1)\n  push(xs, 1)\nend", "name", status=3, line=2)
    assert "ys" in r.diag["message"]


def test_read_on_a_path_not_taken_stays_a_runtime_error(fails, ok):
    code = "if false\n  late = 1\nend\nprint(late)"
    r = fails(code, "name", line=4)
    assert r.diag["message"] == "variable `late` has no value"
    assert r.diag["column"] == 7
    # ... and it is catchable, as runtime errors are.
    assert ok("try\n  print(late)\ncatch e\n  print(e.kind)\nend\nif false\n  late = 1\nend") == "name\n"


def test_read_before_assignment_of_a_local_suggests_global(fails):
    r = fails("count = 0\nfn bump()\n  count += 1\nend\nbump()", "name", line=3)
    assert r.diag["help"][0].endswith("add `global count` to use the global"), r.diag
