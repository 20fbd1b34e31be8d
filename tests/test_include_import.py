"""include "PATH" and import NAME at load time (SPEC 5, 7; src/source.rs).

A missing include file or stdlib module is a load error (exit 3, kind `include`) that
names the including file and line; nothing of main runs. Also: includes are relative to
the including file, run where they stand, load once per canonical path, need no
--allow-files, refuse cycles, and never hang on a FIFO.
"""
import os
import subprocess

import pytest

from conftest import run

TIMEOUT = 10


def leash(args, cwd, timeout=TIMEOUT):
    try:
        return run(args, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"leash did not finish within {timeout}s (blocked while loading?)")


def write(p, text):
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def run_json(main, cwd, *opts):
    return leash(["--error-format", "json", *opts, main], cwd=cwd)


# ---------------------------------------------------------------------------
# Missing files and modules: load errors with the including line
# ---------------------------------------------------------------------------


def test_missing_include_is_load_error_with_including_line(tmp_path):
    main = write(tmp_path / "main.lsh", 'print("not run")\n\ninclude "nope.lsh"\n')
    r = run_json(main, tmp_path)
    assert (r.status, r.out) == (3, ""), r
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("load", "include", 3)
    assert d["file"] == str(main)
    assert "nope.lsh" in d["message"] and os.strerror(2) in d["message"]


def test_missing_include_text_format_names_file_and_line(tmp_path):
    write(tmp_path / "main.lsh", 'x = 1\ninclude "nope.lsh"\n')
    r = leash(["main.lsh"], cwd=tmp_path)
    assert r.status == 3, r
    assert "main.lsh" in r.err and ":2" in r.err and "include" in r.err and "nope.lsh" in r.err


def test_missing_include_in_nested_file_names_the_nested_file(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "lib/a.lsh"\n')
    a = write(tmp_path / "lib" / "a.lsh", '# a\nfn fa()\nend\ninclude "missing.lsh"\n')
    r = run_json(main, tmp_path)
    assert r.status == 3, r
    d = r.diag
    assert (d["kind"], d["line"]) == ("include", 4)
    assert os.path.realpath(d["file"]) == os.path.realpath(a)
    assert "missing.lsh" in d["message"]


def test_missing_module_is_load_error_with_importing_line(tmp_path):
    main = write(tmp_path / "main.lsh", 'print("not run")\nimport nosuchmodule\n')
    r = run_json(main, tmp_path)
    assert (r.status, r.out) == (3, ""), r
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("load", "include", 2)
    assert d["file"] == str(main)
    assert "nosuchmodule" in d["message"]


def test_missing_module_in_included_file_names_that_file(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "lib.lsh"\n')
    lib = write(tmp_path / "lib.lsh", '\n\nimport nosuch\n')
    r = run_json(main, tmp_path)
    assert r.status == 3, r
    d = r.diag
    assert (d["kind"], d["line"]) == ("include", 3)
    assert os.path.realpath(d["file"]) == os.path.realpath(lib)


def test_load_errors_are_reported_together(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "a.lsh"\nimport nope\ninclude "b.lsh"\nfn f()\n  undefined_fn()\nend\n')
    r = run_json(main, tmp_path)
    assert r.status == 3, r
    got = sorted((d["kind"], d["line"]) for d in r.diags)
    assert got == [("include", 1), ("include", 2), ("include", 3), ("name", 5)], r.diags


def test_check_reports_missing_include(tmp_path):
    write(tmp_path / "main.lsh", 'include "gone.lsh"\n')
    r = leash(["--error-format", "json", "check", "main.lsh"], cwd=tmp_path)
    assert r.status == 3, r
    assert (r.diag["kind"], r.diag["line"]) == ("include", 1)


def test_include_of_a_directory_is_load_error(tmp_path):
    (tmp_path / "dir.lsh").mkdir()
    main = write(tmp_path / "main.lsh", 'include "dir.lsh"\n')
    r = run_json(main, tmp_path)
    assert r.status == 3, r
    assert (r.diag["kind"], r.diag["line"]) == ("include", 1)


def test_include_of_a_fifo_is_load_error_never_a_hang(tmp_path):
    os.mkfifo(tmp_path / "fifo.lsh")
    main = write(tmp_path / "main.lsh", 'include "fifo.lsh"\n')
    r = leash(["--error-format", "json", main], cwd=tmp_path, timeout=5)
    assert r.status == 3, r
    assert (r.diag["kind"], r.diag["line"]) == ("include", 1)


def test_include_cycle_is_load_error(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "a.lsh"\n')
    write(tmp_path / "a.lsh", 'include "b.lsh"\n')
    b = write(tmp_path / "b.lsh", 'x = 1\ninclude "a.lsh"\n')
    r = run_json(main, tmp_path)
    assert r.status == 3, r
    d = r.diag
    assert (d["kind"], d["line"]) == ("include", 2)
    assert os.path.realpath(d["file"]) == os.path.realpath(b)


def test_including_main_itself_is_a_cycle(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "main.lsh"\n')
    r = run_json(main, tmp_path)
    assert r.status == 3 and r.diag["kind"] == "include", r


# ---------------------------------------------------------------------------
# What include does
# ---------------------------------------------------------------------------


def test_include_runs_where_it_stands(tmp_path):
    main = write(tmp_path / "main.lsh", 'print("1")\ninclude "lib.lsh"\nprint("3", helper())\n')
    write(tmp_path / "lib.lsh", 'print("2")\nfn helper()\n  return "h"\nend\n')
    r = run_json(main, tmp_path)
    assert (r.status, r.out) == (0, "1\n2\n3 h\n"), r


def test_include_is_relative_to_the_including_file(tmp_path):
    main = write(tmp_path / "proj" / "main.lsh", 'include "lib/a.lsh"\nprint("main")\n')
    write(tmp_path / "proj" / "lib" / "a.lsh", 'include "b.lsh"\nprint("a")\n')
    write(tmp_path / "proj" / "lib" / "b.lsh", 'print("b")\n')
    # decoys relative to the working directory must not be picked up
    write(tmp_path / "lib" / "a.lsh", 'print("WRONG a")\n')
    write(tmp_path / "b.lsh", 'print("WRONG b")\n')
    r = run_json(main, tmp_path)
    assert (r.status, r.out) == (0, "b\na\nmain\n"), r


def test_include_loads_once_per_canonical_path(tmp_path):
    main = write(
        tmp_path / "main.lsh",
        'include "lib.lsh"\ninclude "./lib.lsh"\ninclude "sub/../lib.lsh"\ninclude "link.lsh"\nprint("n", n)\n',
    )
    (tmp_path / "sub").mkdir()
    write(tmp_path / "lib.lsh", 'print("loaded")\nn = 1\n')
    os.symlink("lib.lsh", tmp_path / "link.lsh")
    r = run_json(main, tmp_path)
    assert (r.status, r.out) == (0, "loaded\nn 1\n"), r


def test_include_needs_no_allow_files(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "lib.lsh"\nprint(v)\n')
    write(tmp_path / "lib.lsh", 'v = "from lib"\n')
    r = run_json(main, tmp_path)
    assert (r.status, r.out) == (0, "from lib\n"), r


def test_include_inside_function_is_structure_error(tmp_path):
    main = write(tmp_path / "main.lsh", 'fn f()\n  include "lib.lsh"\nend\n')
    write(tmp_path / "lib.lsh", "x = 1\n")
    r = run_json(main, tmp_path)
    assert r.status == 3, r
    assert (r.diag["kind"], r.diag["line"]) == ("structure", 2)


def test_errors_in_included_file_name_that_file(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "lib.lsh"\n')
    lib = write(tmp_path / "lib.lsh", 'fn f()\n  len(1, 2)\nend\n')
    r = run_json(main, tmp_path)
    assert r.status == 3, r
    d = r.diag
    assert (d["kind"], d["line"]) == ("arity", 2)
    assert os.path.realpath(d["file"]) == os.path.realpath(lib)


def test_runtime_error_in_included_file_names_that_file(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "lib.lsh"\nboom()\n')
    lib = write(tmp_path / "lib.lsh", 'fn boom()\n  x = 1\n  return x / 0\nend\n')
    r = run_json(main, tmp_path)
    assert r.status == 1, r
    d = r.diag
    assert (d["kind"], d["line"]) == ("arith", 3)
    assert os.path.realpath(d["file"]) == os.path.realpath(lib)


def test_import_in_included_file(tmp_path):
    main = write(tmp_path / "main.lsh", 'include "lib.lsh"\nprint(base("x/y.txt"))\n')
    write(tmp_path / "lib.lsh", 'import path\nfn base(p)\n  return path.basename(p)\nend\n')
    r = run_json(main, tmp_path)
    assert (r.status, r.out) == (0, "y.txt\n"), r


def test_include_from_stdin_program_is_relative_to_cwd(tmp_path):
    write(tmp_path / "lib.lsh", 'print("lib")\n')
    try:
        r = run(["--error-format", "json", "-"], input='include "lib.lsh"\nprint("main")\n', cwd=tmp_path, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail("leash hung")
    assert (r.status, r.out) == (0, "lib\nmain\n"), r
