"""Statements (SPEC 5): assignment, places, control flow, loops, try, include, import."""
import pytest


# --- assignment and places ----------------------------------------------------


# --- if ------------------------------------------------------------------------


# --- while -----------------------------------------------------------------------


# --- for range ---------------------------------------------------------------------


# --- for in ------------------------------------------------------------------------


# --- try / throw ----------------------------------------------------------------------


# --- include and import -------------------------------------------------------------


def test_include_runs_where_it_stands(tmp_path, script):
    (tmp_path / "lib.lsh").write_text('print("lib top")\nfn helper(x)\nreturn x * 2\nend\nlibvar = 5\n')
    r = script('print("before")\ninclude "lib.lsh"\nprint(helper(libvar))\n')
    assert (r.status, r.out) == (0, "before\nlib top\n10\n"), r


def test_included_functions_are_hoisted(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("fn twice(x)\nreturn x * 2\nend\n")
    r = script('print(twice(4))\ninclude "lib.lsh"\n')
    assert (r.status, r.out) == (0, "8\n"), r


def test_include_path_relative_to_including_file(tmp_path, script):
    sub = tmp_path / "sub"
    (sub / "deeper").mkdir(parents=True)
    (sub / "a.lsh").write_text('include "deeper/b.lsh"\nprint("a")\n')
    (sub / "deeper" / "b.lsh").write_text('include "../c.lsh"\nprint("b")\n')
    (sub / "c.lsh").write_text('print("c")\n')
    r = script('include "sub/a.lsh"\nprint("main")\n', cwd="/")
    assert (r.status, r.out) == (0, "c\nb\na\nmain\n"), r


def test_include_once_per_canonical_path(tmp_path, script):
    (tmp_path / "d").mkdir()
    (tmp_path / "once.lsh").write_text('print("loaded")\n')
    r = script('include "once.lsh"\ninclude "./once.lsh"\ninclude "d/../once.lsh"\nprint("end")\n')
    assert (r.status, r.out) == (0, "loaded\nend\n"), r


def test_include_through_symlink_is_same_file(tmp_path, script):
    (tmp_path / "real.lsh").write_text('print("loaded")\n')
    (tmp_path / "link.lsh").symlink_to(tmp_path / "real.lsh")
    r = script('include "real.lsh"\ninclude "link.lsh"\n')
    assert (r.status, r.out) == (0, "loaded\n"), r


def test_include_cycle_is_load_error(tmp_path, script):
    (tmp_path / "a.lsh").write_text('include "b.lsh"\n')
    (tmp_path / "b.lsh").write_text('include "a.lsh"\n')
    r = script('print("x")\ninclude "a.lsh"\n')
    assert r.status == 3 and r.diag["kind"] == "include", r
    assert r.out == ""


def test_include_of_self_is_cycle(script):
    r = script('include "t.lsh"\nprint(1)\n')
    assert r.status == 3 and r.diag["kind"] == "include", r


@pytest.mark.parametrize(
    "src",
    [
        'if true\ninclude "lib.lsh"\nend',
        'fn f()\ninclude "lib.lsh"\nend',
        'while false\ninclude "lib.lsh"\nend',
        'try\ninclude "lib.lsh"\ncatch e\nend',
        "if true\nimport cgi\nend",
        "fn f()\nimport cgi\nend",
    ],
)
def test_include_import_not_at_top_level(tmp_path, script, src):
    (tmp_path / "lib.lsh").write_text("x = 1\n")
    r = script(src + "\n")
    assert r.status == 3 and r.diag["kind"] == "structure", r


def test_include_errors_report_included_file(tmp_path, script):
    (tmp_path / "bad.lsh").write_text("x = 1\ny = (2\n")
    r = script('include "bad.lsh"\n')
    assert r.status == 3 and r.diag["kind"] == "syntax", r
    assert r.diag["file"].endswith("bad.lsh") and r.diag["line"] == 2


def test_runtime_error_in_included_file_names_it(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("fn f()\n\nreturn 1 / 0\nend\n")
    r = script('include "lib.lsh"\nf()\n')
    assert r.status == 1 and r.diag["file"].endswith("lib.lsh") and r.diag["line"] == 3, r


def test_include_needs_no_allow_files(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("v = 1\n")
    r = script('include "lib.lsh"\nprint(v)\n')
    assert (r.status, r.out) == (0, "1\n")


def test_duplicate_function_across_include(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("fn f()\nend\n")
    r = script('include "lib.lsh"\nfn f()\nend\n')
    assert r.status == 3 and r.diag["kind"] == "name", r


def test_diamond_include_runs_shared_file_once(tmp_path, script):
    (tmp_path / "shared.lsh").write_text('print("shared")\n')
    (tmp_path / "a.lsh").write_text('include "shared.lsh"\nprint("a")\n')
    (tmp_path / "b.lsh").write_text('include "shared.lsh"\nprint("b")\n')
    r = script('include "a.lsh"\ninclude "b.lsh"\nprint("main")\n')
    assert (r.status, r.out) == (0, "shared\na\nb\nmain\n"), r
