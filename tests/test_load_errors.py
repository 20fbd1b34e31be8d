"""Load errors (SPEC 1 exit 3, 6, 7): kinds, many reported together, nothing runs."""
import pytest


@pytest.mark.parametrize(
    "src,kind,line",
    [
        # syntax
        ("x = (1", "syntax", 1),
        ("print(1 2)", "syntax", 1),
        ("x == 1", "syntax", 1),
        ("x = 1 +", "syntax", 1),
        ('x = "abc', "syntax", 1),
        (r'x = "\q"', "syntax", 1),
        ("x = 1e999", "syntax", 1),
        ("x = 1 < 2 < 3", "syntax", 1),
        ("x = @", "syntax", 1),
        ("x = 1 ! 2", "syntax", 1),
        ("fn (a)\nend", "syntax", 1),
        ("fn f(a,)\nend", "syntax", 1),
        ("fn f(1)\nend", "syntax", 1),
        ("while\nend", "syntax", 1),
        ("try x\ncatch e\nend", "syntax", 1),
        ("try\ncatch\nend", "syntax", 2),
        ("try\ncatch 1\nend", "syntax", 2),
        ("global", "syntax", 1),
        ("throw", "syntax", 1),
        ("include", "syntax", 1),
        ("include 5", "syntax", 1),
        ("if true x\nend", "syntax", 1),
        ("end x", "syntax", 1),
        # structure
        ("if true", "structure", 1),
        ("while true\nx = 1", "structure", 1),
        ("end", "structure", 1),
        ("else", "structure", 1),
        ("elif true", "structure", 1),
        ("catch e", "structure", 1),
        ("try\nx = 1\nend", "structure", 1),
        ("return 1", "structure", 1),
        ("global g", "structure", 1),
        ("break", "structure", 1),
        ("continue", "structure", 1),
        ("if true\nfn f()\nend\nend", "structure", 2),
        ('if true\ninclude "x.lsh"\nend', "structure", 2),
        ("if true\nimport cgi\nend", "structure", 2),
        # names
        ("x = nope()", "name", 1),
        ("fn f()\nend\nfn f()\nend", "name", 3),
        ("fn len(x)\nend", "name", 1),
        ("math = 1", "name", 1),
        ("fn f(env)\nend", "name", 1),
        ("fn math()\nend", "name", 1),
        # arity
        ("fn f(a, b)\nend\nf(1)", "arity", 3),
        ("x = len()", "arity", 1),
        ("x = upper(1, 2)", "arity", 1),
        # include
        ('include "missing.lsh"', "include", 1),
    ],
)
def test_load_error_kinds(script, src, kind, line):
    r = script('print("must not run")\n' + src + "\n")
    assert r.status == 3, r
    d = r.diag
    assert d["error"] == "load" and d["kind"] == kind, r
    assert d["line"] == line + 1, r
    assert d["file"].endswith("t.lsh")
    assert r.out == ""


def test_encoding_load_error(script):
    r = script(b'print("must not run")\nx = "\xc0\xaf"\n')
    assert r.status == 3 and r.diag["kind"] == "encoding" and r.out == ""


def test_encoding_error_in_included_file(tmp_path, script):
    (tmp_path / "lib.lsh").write_bytes(b"x = 1\ny = '\xff'\n")
    r = script('print("no")\ninclude "lib.lsh"\n')
    assert r.status == 3 and r.diag["kind"] == "encoding", r
    assert r.diag["file"].endswith("lib.lsh")
    assert r.out == ""


def test_many_kinds_reported_together(script):
    src = "\n".join(
        [
            'print("no")',  # 1
            "x = (1]",  # 2 syntax (a wrong closer: an open `(` would go on, SPEC 2)
            "y = nosuch()",  # 3 name
            "z = len(1, 2)",  # 4 arity
            "fn f()",  # 5
            "end",  # 6
            "fn f()",  # 7 name (duplicate)
            "end",  # 8
            "break",  # 9 structure
            "q = 1 2",  # 10 syntax
        ]
    ) + "\n"
    r = script(src)
    assert r.status == 3
    got = {(d["kind"], d["line"]) for d in r.diags}
    assert {("syntax", 2), ("name", 3), ("arity", 4), ("name", 7), ("structure", 9), ("syntax", 10)} <= got, got
    for d in r.diags:
        assert d["error"] == "load" and d["file"].endswith("t.lsh") and isinstance(d["line"], int)
    assert r.out == ""


def test_at_most_20_errors_reported(script):
    # (A closer without an opener: each line is its own error. An opener left open
    # would make the statement go on to the end of the file, SPEC 2.)
    src = "\n".join(f"x{i} = )" for i in range(30)) + "\n"
    r = script(src)
    assert r.status == 3
    assert len(r.diags) == 20
    assert [d["line"] for d in r.diags] == list(range(1, 21))


def test_errors_in_several_files_each_name_their_file(tmp_path, script):
    (tmp_path / "a.lsh").write_text("x = (\n")
    (tmp_path / "b.lsh").write_text("\ny = nope()\n")
    r = script('include "a.lsh"\ninclude "b.lsh"\nz = )\n')
    assert r.status == 3
    found = {(d["file"].rsplit("/", 1)[-1], d["line"]) for d in r.diags}
    assert {("a.lsh", 1), ("b.lsh", 2), ("t.lsh", 3)} <= found, found


def test_load_errors_in_text_format_each_on_a_line(script):
    r = script("x = (\ny = nope()\n", opts=["--error-format", "text"])
    assert r.status == 3
    lines = [ln for ln in r.err.splitlines() if "load error" in ln]
    assert len(lines) == 2
    # FILE:LINE:COLUMN (SPEC 7): the `(` never closed, the unknown function's name.
    assert "t.lsh:1:5: load error [syntax]: " in lines[0]
    assert "t.lsh:2:5: load error [name]: " in lines[1]


def test_nothing_runs_not_even_includes(tmp_path, script):
    (tmp_path / "lib.lsh").write_text('print("lib ran")\n')
    r = script('include "lib.lsh"\nprint("main ran")\nfn f()\nx = nope()\nend\n')
    assert r.status == 3 and r.out == ""


def test_load_error_stats_are_zero(script):
    r = script("if true\n", opts=["--stats"])
    assert r.status == 3 and r.stats["steps"] == 0
