"""`leash check` (SPEC 1, 9): load and validate only, print the capabilities needed."""
import pytest

from conftest import run


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_core_only_script_has_no_capabilities(tmp_path):
    p = write(tmp_path, "a.lsh", 'print("hello")\nx = len([1]) + math.pow(2, 2)\n')
    r = run(["check", p], cwd=tmp_path)
    assert (r.status, r.out) == (0, "capabilities: none\n"), r


def test_core_namespaces_need_no_capabilities(tmp_path):
    src = 'x = math.sin(1)\nrand.seed(1)\ny = rand.int(1, 2)\nz = env.get("HOME")\nenv.set("A", "b")\nw = stdin.read_line()\n'
    r = run(["check", write(tmp_path, "a.lsh", src)])
    assert (r.status, r.out) == (0, "capabilities: none\n"), r


def test_check_does_not_run_the_script(tmp_path):
    p = write(tmp_path, "a.lsh", 'print("ran")\neprint("ran")\nx = stdin.read_line()\nexit(7)\nwhile true\nend\n')
    r = run(["check", p], input=b"line\n", timeout=20)
    assert (r.status, r.out) == (0, "capabilities: none\n"), r
    assert "ran" not in r.err


def test_check_does_not_run_runtime_errors(tmp_path):
    r = run(["check", write(tmp_path, "a.lsh", "x = 1 / 0\ny = [][5]\nthrow 1\n")])
    assert (r.status, r.out) == (0, "capabilities: none\n"), r


def test_check_several_scripts(tmp_path):
    a = write(tmp_path, "a.lsh", "print(1)\n")
    b = write(tmp_path, "b.lsh", "print(2)\n")
    r = run(["check", "a.lsh", "b.lsh"], cwd=tmp_path)
    assert (r.status, r.out) == (0, "a.lsh: capabilities: none\nb.lsh: capabilities: none\n"), r
    r = run(["check", b, a])
    assert r.status == 0
    assert r.out == f"{b}: capabilities: none\n{a}: capabilities: none\n"


def test_check_load_error_exit_3(tmp_path):
    p = write(tmp_path, "bad.lsh", 'print("x")\nif true\nx = nope()\n')
    r = run(["check", "--error-format", "json", p])
    assert r.status == 3, r
    kinds = {(d["kind"], d["line"]) for d in r.diags}
    assert ("name", 3) in kinds and ("structure", 2) in kinds, kinds
    for d in r.diags:
        assert d["error"] == "load" and d["file"].endswith("bad.lsh")
    assert "capabilities" not in r.out


def test_check_text_diagnostics(tmp_path):
    p = write(tmp_path, "bad.lsh", "x = (1\n")
    r = run(["check", "bad.lsh"], cwd=tmp_path)
    assert r.status == 3
    assert "bad.lsh:1:5: load error [syntax]: " in r.err


def test_check_mixed_good_and_bad(tmp_path):
    write(tmp_path, "good.lsh", "print(1)\n")
    write(tmp_path, "bad.lsh", "fn f(a)\nend\nf()\n")
    r = run(["check", "--error-format", "json", "good.lsh", "bad.lsh"], cwd=tmp_path)
    assert r.status == 3, r
    assert "good.lsh: capabilities: none" in r.out
    assert r.diag["kind"] == "arity" and r.diag["file"].endswith("bad.lsh") and r.diag["line"] == 3


def test_check_validates_unreachable_code(tmp_path):
    p = write(tmp_path, "a.lsh", "print(1)\nfn never()\nx = len(1, 2)\nend\n")
    r = run(["check", "--error-format", "json", p])
    assert r.status == 3 and r.diag["kind"] == "arity" and r.diag["line"] == 3


def test_check_follows_includes(tmp_path):
    write(tmp_path, "lib.lsh", "fn helper()\nreturn nope()\nend\n")
    p = write(tmp_path, "a.lsh", 'include "lib.lsh"\nprint(helper())\n')
    r = run(["check", "--error-format", "json", p])
    assert r.status == 3 and r.diag["kind"] == "name" and r.diag["file"].endswith("lib.lsh")
    write(tmp_path, "lib.lsh", "fn helper()\nreturn 1\nend\n")
    r = run(["check", p])
    assert (r.status, r.out) == (0, "capabilities: none\n")


def test_check_missing_include(tmp_path):
    p = write(tmp_path, "a.lsh", 'include "gone.lsh"\n')
    r = run(["check", "--error-format", "json", p])
    assert r.status == 3 and r.diag["kind"] == "include"


def test_check_missing_script(tmp_path):
    r = run(["check", "--error-format", "json", tmp_path / "absent.lsh"])
    assert r.status == 3 and r.diag["error"] == "load" and r.diag["kind"] == "include"


def test_check_load_limits(tmp_path):
    p = write(tmp_path, "deep.lsh", "if true\n" * 129 + "end\n" * 129)
    r = run(["check", "--error-format", "json", p])
    assert r.status == 3 and r.diag["kind"] == "nesting"
    p = write(tmp_path, "ok.lsh", "if true\n" * 128 + "end\n" * 128)
    r = run(["check", p])
    assert (r.status, r.out) == (0, "capabilities: none\n")


def test_check_encoding_error(tmp_path):
    p = tmp_path / "enc.lsh"
    p.write_bytes(b"x = '\xff'\n")
    r = run(["check", "--error-format", "json", p])
    assert r.status == 3 and r.diag["kind"] == "encoding"


def test_check_without_scripts_is_usage_error():
    r = run(["check"])
    assert r.status == 2
    assert r.err.startswith("leash: usage error [usage]: ")


@pytest.mark.parametrize("opts", [["--bogus"], ["--max-steps", "0"], ["--allow-listen"]])
def test_check_bad_options_are_usage_errors(tmp_path, opts):
    p = write(tmp_path, "a.lsh", "print(1)\n")
    r = run(["check", *opts, p])
    assert r.status == 2, r
    assert r.out == ""


def test_check_stats_are_zero(tmp_path):
    p = write(tmp_path, "a.lsh", "print(1)\nprint(2)\n")
    r = run(["check", "--stats", p])
    assert r.status == 0
    assert r.stats["steps"] == 0
