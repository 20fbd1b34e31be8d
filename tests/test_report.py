"""`--report FILE` (SPEC 1): one JSON document at exit, whatever the exit; stderr keeps
only what the script wrote."""
import json
import os
import signal
import subprocess

import pytest

from conftest import LEASH, run

STATS_KEYS = {"steps", "work", "stdout_bytes", "stderr_bytes", "wall_ms", "peak_memory_bytes"}


def report_of(tmp_path, args, name="r.json", **kw):
    path = tmp_path / name
    r = run(["--report", path, *args], cwd=kw.pop("cwd", tmp_path), **kw)
    doc = json.loads(path.read_text())
    assert set(doc) == {"status", "diagnostics", "stats"}, doc
    assert doc["status"] == r.status, (doc, r)
    assert STATS_KEYS <= set(doc["stats"]), doc
    return r, doc


def test_success_keeps_only_the_scripts_stderr(tmp_path):
    r, doc = report_of(tmp_path, ["--stats", "--error-format", "json", "-e", 'print("out")\neprint("err")'])
    assert r.status == 0 and r.out == "out\n"
    # Not the stats line, no diagnostic: only what the script wrote.
    assert r.err == "err\n"
    assert doc["diagnostics"] == []
    assert doc["stats"]["stdout_bytes"] == 4 and doc["stats"]["steps"] == 2


def test_runtime_error_status_1(tmp_path):
    r, doc = report_of(tmp_path, ["-e", 'eprint("before")\nx = 1 / 0'])
    assert r.status == 1 and r.err == "before\n"
    [d] = doc["diagnostics"]
    assert d["error"] == "runtime" and d["kind"] == "arith" and d["line"] == 2 and d["file"] == "-e"
    assert d["column"] >= 1


def test_usage_error_status_2(tmp_path):
    r, doc = report_of(tmp_path, ["--max-steps", "0", "-e", "print(1)"])
    assert r.status == 2 and r.err == ""
    [d] = doc["diagnostics"]
    assert d["error"] == "usage" and "--max-steps" in d["message"]
    # An unknown option after --report, and one before it.
    r, doc = report_of(tmp_path, ["--bogus", "x.lsh"])
    assert r.status == 2 and r.err == "" and "--bogus" in doc["diagnostics"][0]["message"]
    path = tmp_path / "r2.json"
    r = run(["--bogus", "--report", path, "x.lsh"], cwd=tmp_path)
    assert r.status == 2 and r.err == ""
    assert json.loads(path.read_text())["status"] == 2


def test_load_error_status_3(tmp_path):
    (tmp_path / "bad.lsh").write_text('print("a")\nif x\n')
    r, doc = report_of(tmp_path, ["bad.lsh"])
    assert r.status == 3 and r.err == "" and r.out == ""
    assert doc["diagnostics"] and all(d["error"] == "load" for d in doc["diagnostics"])
    assert doc["diagnostics"][0]["file"] == "bad.lsh"
    # A script that cannot be read at all.
    r, doc = report_of(tmp_path, ["missing.lsh"])
    assert r.status == 3 and doc["diagnostics"][0]["kind"] == "include"


def test_limit_status_4(tmp_path):
    r, doc = report_of(tmp_path, ["--max-steps", "50", "-e", "while true\nend"])
    assert r.status == 4 and r.err == ""
    [d] = doc["diagnostics"]
    assert d["error"] == "limit" and d["kind"] == "steps"
    assert doc["stats"]["steps"] == 50


@pytest.mark.parametrize("n", [0, 5, 255])
def test_exit_n(tmp_path, n):
    r, doc = report_of(tmp_path, ["-e", f'print("x")\nexit({n})\nprint("no")'])
    assert r.status == n and r.out == "x\n"
    assert doc["diagnostics"] == []


def test_internal_error_status_70(tmp_path):
    env = dict(os.environ, LEASH_TEST_INTERNAL_ERROR="1")
    r, doc = report_of(tmp_path, ["-e", "print(1)"], env=env)
    assert r.status == 70 and r.err == ""
    assert doc["diagnostics"][0]["error"] == "internal"


def _closed_stdout(tmp_path, restore_sigpipe):
    """Run a script printing much into a pipe whose reader has gone."""
    path = tmp_path / "r.json"
    rfd, wfd = os.pipe()
    os.close(rfd)
    code = 'i = 0\nwhile i < 100000\nprint("line")\ni = i + 1\nend'

    def pre():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL if restore_sigpipe else signal.SIG_IGN)

    try:
        proc = subprocess.run(
            [str(LEASH), "--report", str(path), "-e", code],
            stdout=wfd,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=60,
            preexec_fn=pre,
            restore_signals=False,
        )
    finally:
        os.close(wfd)
    return proc, json.loads(path.read_text())


def test_broken_pipe(tmp_path):
    """SIGPIPE ignored by the parent: writes fail with EPIPE."""
    proc, doc = _closed_stdout(tmp_path, restore_sigpipe=False)
    assert proc.returncode == 1 and proc.stderr == b""
    assert doc["status"] == 1
    [d] = doc["diagnostics"]
    assert d["kind"] == "io" and "stdout" in d["message"]


def test_sigpipe_default(tmp_path):
    """SIGPIPE at its default action (as a shell pipeline gives it): the process is not
    killed by the signal, so the report is still written."""
    proc, doc = _closed_stdout(tmp_path, restore_sigpipe=True)
    assert proc.returncode == 1, proc
    assert doc["status"] == 1 and doc["diagnostics"][0]["kind"] == "io"


def test_reader_goes_away_mid_run(tmp_path):
    """`leash ... | head -1`: the reader closes after the first line."""
    path = tmp_path / "r.json"
    code = 'i = 0\nwhile i < 1000000\nprint("line", i)\ni = i + 1\nend'
    p = subprocess.Popen(
        [str(LEASH), "--max-steps", "10000000", "--report", str(path), "-e", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout.readline().startswith(b"line")
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=60) == 1 and err == b""
    doc = json.loads(path.read_text())
    assert doc["status"] == 1 and doc["diagnostics"][0]["kind"] == "io"


@pytest.mark.parametrize(
    "where,why",
    [
        ("nodir/r.json", "No such file"),
        ("adir", "directory"),
        ("afile/r.json", "directory"),
        ("/proc/leash-report.json", ""),
        ("/dev/null", "not a regular file"),
        ("", "needs a FILE"),
    ],
)
def test_unwritable_report_is_a_usage_error_before_the_run(tmp_path, where, why):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    r = run(["--allow-files", "--report", where, "-e", 'file.write("ran", "yes")'], cwd=tmp_path)
    assert r.status == 2, r
    assert "--report" in r.err and why in r.err, r
    assert not (tmp_path / "ran").exists()


def test_atomic_no_temporary_left(tmp_path):
    (tmp_path / "r.json").write_text("old report")
    r, doc = report_of(tmp_path, ["-e", "print(1)"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    # A symlink at the name is replaced, never written through.
    target = tmp_path / "target.txt"
    target.write_text("keep")
    (tmp_path / "r.json").unlink()
    (tmp_path / "r.json").symlink_to(target)
    report_of(tmp_path, ["-e", "print(1)"])
    assert target.read_text() == "keep" and not (tmp_path / "r.json").is_symlink()


@pytest.mark.parametrize(
    "code",
    [
        'print(file.read("r.json"))',
        'file.write("r.json", "forged")',
        'file.append("r.json", "forged")',
        'file.remove("r.json")',
        'file.write("other", "forged")\nfile.rename("other", "r.json")',
        'file.write("other", "forged")\nfile.copy("other", "r.json")',
        'print(file.exists("r.json"))',
    ],
)
def test_script_cannot_reach_the_report(tmp_path, code):
    (tmp_path / "r.json").write_text('{"old": true}')
    body = "try\n" + code + '\ncatch e\nprint(e.kind, e.message)\nend\n'
    r, doc = report_of(tmp_path, ["--allow-files", "-e", body])
    assert r.status == 0, r
    assert "--report file" in r.out, r
    assert doc["status"] == 0


def test_script_cannot_reach_the_report_in_a_scope(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    body = 'try\nfile.write("data/r.json", "forged")\ncatch e\nprint(e.message)\nend\n'
    r = run(["--allow-files=data", "--report", "data/r.json", "-e", body], cwd=tmp_path)
    assert r.status == 0 and "--report file" in r.out, r
    assert json.loads((d / "r.json").read_text())["status"] == 0


def test_test_command_and_check(tmp_path):
    (tmp_path / "a_test.lsh").write_text('fn test_ok()\nend\nfn test_bad()\nassert_eq(1, 2)\nend\n')
    r, doc = report_of(tmp_path, ["test", "a_test.lsh"])
    assert r.status == 1 and r.err == ""
    assert [d["kind"] for d in doc["diagnostics"]] == ["assert"]
    (tmp_path / "bad.lsh").write_text("if\n")
    r, doc = report_of(tmp_path, ["check", "bad.lsh"])
    assert r.status == 3 and r.err == "" and doc["diagnostics"][0]["error"] == "load"


def test_help_and_version(tmp_path):
    r, doc = report_of(tmp_path, ["--version"])
    assert r.status == 0 and r.out.startswith("leash ") and doc["diagnostics"] == []


@pytest.mark.parametrize(
    "args",
    [
        ["job.lsh"],
        ["./job.lsh"],
        ["--audit", "job.json", "-e", "print(1)"],
        ["--profile", "prof", "-e", "print(1)"],
        ["test", "job.lsh"],
        ["check", "job.lsh"],
    ],
)
def test_report_may_not_replace_what_the_run_uses(tmp_path, args):
    (tmp_path / "job.lsh").write_text('print("job")\n')
    report = {"--audit": "job.json", "--profile": "prof.work"}.get(args[0], "job.lsh")
    r = run(["--report", report, *args], cwd=tmp_path)
    assert r.status == 2 and "--report" in r.err, r
    assert (tmp_path / "job.lsh").read_text() == 'print("job")\n'
