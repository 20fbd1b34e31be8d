"""Issue 10 (hardening), items 1, 2, 3, 4, 7, 9 and 10: each hole the hostile review
found, as a regression test that failed on the code before the fix.

1. the CLI's own output (help, version, builtins, check, test) to a closed pipe or a
   full device: never exit 70; a broken pipe ends quietly with status 1, another write
   error is an `io` diagnostic;
2. assert_snapshot: no symlinks followed, no FIFO hang, writes charged to `file_writes`;
3. include: only beneath the entry script's directory, an --include-path, or a read grant;
4. a FIFO or directory as the main script, a `check` argument or a test file: a load
   error at once;
7. date.format of whole seconds at every magnitude;
9. `for` ranges whose k * step overflows;
10. stdin redirected from a directory is an `io` error, not the end of input.
"""
import json
import os
import subprocess

import pytest

from conftest import LEASH, ROOT, run

TIMEOUT = 10


def leash(args, timeout=TIMEOUT, **kw):
    try:
        return run(args, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        pytest.fail(f"leash did not finish within {timeout}s (blocked?)")


def write(p, text):
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def diags(err):
    return [json.loads(line) for line in err.splitlines() if line.startswith("{") and '"error"' in line]


# ---------------------------------------------------------------------------
# 1. The CLI's own output: closed pipes and full devices
# ---------------------------------------------------------------------------


def run_to(stdout, args, cwd):
    """Run leash with `stdout` (a file descriptor) as its standard output."""
    try:
        p = subprocess.run(
            [str(LEASH), *map(str, args)], stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            cwd=cwd, timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("leash hung writing to a broken stdout")
    return p.returncode, p.stderr.decode("utf-8", "replace")


def closed_pipe():
    """The write end of a pipe whose reader is already gone: every write is EPIPE."""
    r, w = os.pipe()
    os.close(r)
    return w


@pytest.fixture
def cli_cases(tmp_path):
    write(tmp_path / "a_test.lsh", "fn test_one()\nend\nfn test_two()\nend\n")
    write(tmp_path / "a.lsh", "print(1)\n")
    write(tmp_path / "b.lsh", "x = 2\n")
    return tmp_path


CLI_COMMANDS = [
    ["--version"],
    ["--help"],
    ["--builtins"],
    ["test", "a_test.lsh"],
    ["test"],
    ["check", "a.lsh"],
    ["check", "a.lsh", "b.lsh"],
]


@pytest.mark.parametrize("args", CLI_COMMANDS, ids=" ".join)
def test_cli_output_to_a_closed_pipe_ends_quietly(cli_cases, args):
    w = closed_pipe()
    try:
        status, err = run_to(w, ["--error-format", "json", *args], cli_cases)
    finally:
        os.close(w)
    assert status == 1, (status, err)
    assert err == "", err  # quiet: the reader left, nobody is told


@pytest.mark.parametrize("args", CLI_COMMANDS, ids=" ".join)
def test_cli_output_to_a_full_device_is_an_io_diagnostic(cli_cases, args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb") as full:
        status, err = run_to(full.fileno(), ["--error-format", "json", *args], cli_cases)
    assert status == 1, (status, err)
    ds = diags(err)
    assert [(d["error"], d["kind"]) for d in ds] == [("runtime", "io")], err
    assert "cannot write to stdout" in ds[0]["message"] and os.strerror(28) in ds[0]["message"]


def test_cli_output_failure_keeps_a_worse_status(cli_cases):
    # check of a bad script is status 3 whatever happens to stdout.
    write(cli_cases / "bad.lsh", "if\n")
    w = closed_pipe()
    try:
        status, err = run_to(w, ["--error-format", "json", "check", "a.lsh", "bad.lsh"], cli_cases)
    finally:
        os.close(w)
    assert status in (1, 3), (status, err)
    assert "internal" not in err


def first_line_then_close(args, cwd):
    """Run leash, read one line of its stdout, then close the pipe (as `| head -1` does):
    (first line, the finished process, its stderr)."""
    p = subprocess.Popen(
        [str(LEASH), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    first = p.stdout.readline()
    p.stdout.close()
    try:
        err = p.stderr.read()
        p.wait(timeout=30)
    finally:
        p.kill()
    return first, p, err


def test_test_runner_piped_to_head_is_never_70(tmp_path):
    # More result lines than a pipe holds, read by a consumer that stops after one.
    names = [f"test_{i:04d}_{'x' * 60}" for i in range(3000)]
    write(tmp_path / "many_test.lsh", "".join(f"fn {n}()\nend\n" for n in names))
    first, p, err = first_line_then_close(["test", "many_test.lsh"], tmp_path)
    assert first == f"ok many_test.lsh {names[0]}\n".encode()
    assert p.returncode == 1, (p.returncode, err)
    assert b"internal" not in err and err == b"", err


def test_check_of_many_scripts_piped_to_head_is_never_70(tmp_path):
    paths = []
    for i in range(2000):
        paths.append(write(tmp_path / f"script_{i:04d}_{'y' * 40}.lsh", "x = 1\n").name)
    first, p, err = first_line_then_close(["check", *paths], tmp_path)
    assert first == f"{paths[0]}: capabilities: none\n".encode()
    assert p.returncode == 1 and err == b"", (p.returncode, err)


def test_test_runner_output_still_complete_on_a_good_pipe(tmp_path):
    write(tmp_path / "a_test.lsh", 'fn test_one()\n  print("out")\nend\n')
    r = leash(["test"], cwd=tmp_path)
    assert (r.status, r.out) == (0, "out\nok a_test.lsh test_one\n1 passed, 0 failed\n"), r


def test_cgi_output_to_a_full_device_is_an_io_diagnostic(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    write(tmp_path / "page.lsh", 'print("Content-Type: text/plain")\nprint("")\nprint("hi")\n')
    with open("/dev/full", "wb") as full:
        status, err = run_to(full.fileno(), ["--cgi", "--error-format", "json", "page.lsh"], tmp_path)
    assert status == 1 and [d["kind"] for d in diags(err)] == ["io"], err


LEASH_CGI = LEASH.parent / "leash-cgi"
CGI_COMMANDS = [["--help"], ["--version"], ["--check-config", "gw.toml"]]


def run_cgi_to(stdout, args, cwd):
    """Run leash-cgi with `stdout` (a file descriptor) as its standard output."""
    try:
        p = subprocess.run(
            [str(LEASH_CGI), *map(str, args)], stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            cwd=cwd, timeout=TIMEOUT, env={"PATH": os.environ.get("PATH", "")},
        )
    except subprocess.TimeoutExpired:
        pytest.fail("leash-cgi hung writing to a broken stdout")
    return p.returncode, p.stderr.decode("utf-8", "replace")


@pytest.fixture
def cgi_cases(tmp_path):
    if not LEASH_CGI.exists():
        pytest.skip(f"{LEASH_CGI} is not built")
    (tmp_path / "www").mkdir()
    write(tmp_path / "gw.toml", f'root = "{tmp_path / "www"}"\n')
    return tmp_path


@pytest.mark.parametrize("args", CGI_COMMANDS, ids=" ".join)
def test_cgi_gateway_output_to_a_closed_pipe_is_quiet(cgi_cases, args):
    ok, _ = run_cgi_to(subprocess.DEVNULL, args, cgi_cases)
    assert ok == 0
    w = closed_pipe()
    try:
        status, err = run_cgi_to(w, args, cgi_cases)
    finally:
        os.close(w)
    assert status == 1, (status, err)
    assert err == "", err


@pytest.mark.parametrize("args", CGI_COMMANDS, ids=" ".join)
def test_cgi_gateway_output_to_a_full_device_is_a_diagnostic(cgi_cases, args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb") as full:
        status, err = run_cgi_to(full.fileno(), args, cgi_cases)
    assert status == 1, (status, err)
    assert err == f"leash-cgi: cannot write to stdout: {os.strerror(28)}\n", err


def test_no_print_macros_on_the_cli_paths():
    # print!/println! panic when stdout fails; the CLI writes through checked writes.
    root = ROOT / "src"
    for name in ["app.rs", "testrun.rs", "main.rs", "cli.rs", "bin/leash-cgi.rs"]:
        text = (root / name).read_text()
        for mac in ["println!", "print!(", "eprintln!", "eprint!("]:
            assert mac not in text, f"{mac} in src/{name}"


# ---------------------------------------------------------------------------
# 2. assert_snapshot: symlinks, FIFOs, the file-write budget
# ---------------------------------------------------------------------------


SNAP_TEST = 'fn test_s()\n  assert_snapshot("a", "NEW CONTENT")\nend\n'


@pytest.fixture
def snap(tmp_path):
    proj = tmp_path / "proj"
    write(proj / "w.lsh", SNAP_TEST)
    outside = write(tmp_path / "outside" / "target.txt", "SECRET TARGET TEXT")
    return proj, outside


def snap_run(proj, *opts):
    return leash(["test", "--error-format", "json", *opts, "w.lsh"], cwd=proj)


def test_snapshot_update_does_not_write_through_a_symlinked_file(snap):
    proj, outside = snap
    (proj / "__snapshots__" / "w").mkdir(parents=True)
    os.symlink("../../../outside/target.txt", proj / "__snapshots__" / "w" / "a.snap")
    r = snap_run(proj, "--update-snapshots")
    assert outside.read_text() == "SECRET TARGET TEXT"
    assert r.status == 1 and "FAIL w.lsh test_s" in r.out, r
    assert r.diag["kind"] == "io" and "symbolic link" in r.diag["message"], r


def test_snapshot_read_through_a_symlink_quotes_nothing_of_the_target(snap):
    proj, outside = snap
    (proj / "__snapshots__" / "w").mkdir(parents=True)
    os.symlink("../../../outside/target.txt", proj / "__snapshots__" / "w" / "a.snap")
    r = snap_run(proj)
    assert r.status == 1, r
    assert "SECRET" not in r.out and "SECRET" not in r.err, r
    assert r.diag["kind"] == "io", r


@pytest.mark.parametrize("which", ["__snapshots__", "w"])
def test_snapshot_folders_must_not_be_symlinks(snap, which):
    proj, outside = snap
    evil = outside.parent
    if which == "__snapshots__":
        (evil / "w").mkdir()
        os.symlink(evil, proj / "__snapshots__")
    else:
        (proj / "__snapshots__").mkdir()
        os.symlink(evil, proj / "__snapshots__" / "w")
    r = snap_run(proj, "--update-snapshots")
    assert r.status == 1 and r.diag["kind"] == "io", r
    assert sorted(p.name for p in evil.rglob("*")) == (["target.txt", "w"] if which == "__snapshots__" else ["target.txt"])


def test_snapshot_fifo_is_refused_without_a_hang(snap):
    proj, _ = snap
    (proj / "__snapshots__" / "w").mkdir(parents=True)
    os.mkfifo(proj / "__snapshots__" / "w" / "a.snap")
    for opts in [(), ("--update-snapshots",)]:
        r = snap_run(proj, *opts)
        assert r.status == 1 and r.diag["kind"] == "io" and "not a regular file" in r.diag["message"], r


def test_snapshot_update_replaces_a_hard_link_not_its_target(snap):
    proj, outside = snap
    (proj / "__snapshots__" / "w").mkdir(parents=True)
    os.link(outside, proj / "__snapshots__" / "w" / "a.snap")
    r = snap_run(proj, "--update-snapshots")
    assert r.status == 0, r
    assert outside.read_text() == "SECRET TARGET TEXT"
    assert (proj / "__snapshots__" / "w" / "a.snap").read_text() == "NEW CONTENT"
    assert sorted(p.name for p in (proj / "__snapshots__" / "w").iterdir()) == ["a.snap"]  # no temp file left


def test_snapshot_of_a_script_named_dot_dot_stays_inside(tmp_path):
    # "...lsh" has the stem "..": its snapshots would land beside __snapshots__.
    write(tmp_path / "...lsh", SNAP_TEST)
    r = leash(["test", "--error-format", "json", "--update-snapshots", "...lsh"], cwd=tmp_path)
    assert r.status == 1 and r.diag["kind"] == "value", r
    assert not (tmp_path / "a.snap").exists()


def test_snapshot_writes_are_charged_to_the_file_write_budget(tmp_path):
    # 20 snapshots of just under 1 MiB: the 17th passes the 16 MiB budget, a `file_writes`
    # limit, and nothing of it reaches the disk.
    code = 'fn test_big()\n  s = repeat("x", 1048570)\n  for i = 1 to 20\n    assert_snapshot("s" .. i, s .. i)\n  end\nend\n'
    write(tmp_path / "big_test.lsh", code)
    r = leash(["test", "--error-format", "json", "--update-snapshots", "big_test.lsh"], cwd=tmp_path, timeout=60)
    assert r.status == 1, r
    assert (r.diag["error"], r.diag["kind"]) == ("limit", "file_writes"), r
    snaps = list((tmp_path / "__snapshots__" / "big_test").iterdir())
    assert len(snaps) == 16, sorted(p.name for p in snaps)
    # In a plain run too, with the figure in --stats.
    write(tmp_path / "one.lsh", 'assert_snapshot("x", "12345")\n')
    r = leash(["--stats", "--update-snapshots", "one.lsh"], cwd=tmp_path)
    assert r.status == 0 and r.stats["file_write_bytes"] == 5, r
    # An unchanged snapshot is not written again, so not charged.
    r = leash(["--stats", "--update-snapshots", "one.lsh"], cwd=tmp_path)
    assert r.status == 0 and r.stats["file_write_bytes"] == 0, r


def test_snapshots_still_work(tmp_path):
    write(tmp_path / "s_test.lsh", 'fn test_s()\n  assert_snapshot("v", [1, "two"])\nend\n')
    r = leash(["test", "s_test.lsh"], cwd=tmp_path)
    assert r.status == 1 and "missing" in r.out, r
    r = leash(["test", "--update-snapshots", "s_test.lsh"], cwd=tmp_path)
    assert r.status == 0, r
    assert (tmp_path / "__snapshots__" / "s_test" / "v.snap").read_text() == '[1,"two"]'
    r = leash(["test", "s_test.lsh"], cwd=tmp_path)
    assert r.status == 0, r
    (tmp_path / "__snapshots__" / "s_test" / "v.snap").write_text("old")
    r = leash(["test", "s_test.lsh"], cwd=tmp_path)
    # The mismatch shows a unified diff of expected and actual (SPEC 11).
    assert r.status == 1 and "differs" in r.out and '-old\n+[1,"two"]' in r.out, r


# ---------------------------------------------------------------------------
# 3. include: beneath the script's directory, an --include-path, or a read grant
# ---------------------------------------------------------------------------

SECRET = 'db_password = "hunter2-SECRET"\n'


@pytest.fixture
def inc(tmp_path):
    proj = tmp_path / "proj"
    write(proj / "lib" / "ok.lsh", 'fn helper()\n  return "helper"\nend\n')
    write(tmp_path / "outside" / "config.toml", SECRET)
    write(tmp_path / "outside" / "bad.lsh", "if if if SECRET_SYNTAX\n")
    return proj


def refused(r, path_part):
    assert r.status == 3, r
    assert r.out == "", r
    d = r.diag
    assert (d["error"], d["kind"]) == ("load", "include"), d
    assert path_part in d["message"], d
    assert "SECRET" not in r.err and "hunter2" not in r.err, r.err
    return d


@pytest.mark.parametrize("target", ["../outside/config.toml", "OUTSIDE/config.toml", "../outside/bad.lsh"])
def test_include_outside_the_script_directory_is_refused(inc, target):
    target = target.replace("OUTSIDE", str(inc.parent / "outside"))
    write(inc / "main.lsh", f'include "{target}"\nprint(db_password)\n')
    refused(leash(["--error-format", "json", "main.lsh"], cwd=inc), "outside")


def test_include_of_proc_maps_quotes_nothing(inc):
    write(inc / "main.lsh", 'include "/proc/self/maps"\n')
    r = leash(["--error-format", "json", "main.lsh"], cwd=inc)
    d = refused(r, "/proc/self/maps")
    assert "r-xp" not in r.err and "[stack]" not in r.err


def test_include_through_a_symlink_pointing_outside_is_refused(inc):
    os.symlink(inc.parent / "outside" / "config.toml", inc / "link.lsh")
    os.symlink(inc.parent / "outside", inc / "linkdir")
    for target in ["link.lsh", "linkdir/config.toml"]:
        write(inc / "main.lsh", f'include "{target}"\nprint(db_password)\n')
        refused(leash(["--error-format", "json", "main.lsh"], cwd=inc), "outside")


def test_include_of_a_missing_file_outside_says_outside_not_missing(inc):
    write(inc / "main.lsh", 'include "../outside/nothing-here.lsh"\n')
    d = refused(leash(["--error-format", "json", "main.lsh"], cwd=inc), "outside")
    assert os.strerror(2) not in d["message"]
    # Inside, a missing file is still reported as missing.
    write(inc / "main.lsh", 'include "lib/nothing-here.lsh"\n')
    r = leash(["--error-format", "json", "main.lsh"], cwd=inc)
    assert r.status == 3 and os.strerror(2) in r.diag["message"], r


def test_include_from_an_included_file_is_held_to_the_same_area(inc):
    write(inc / "lib" / "chain.lsh", 'include "../../outside/config.toml"\n')
    write(inc / "main.lsh", 'include "lib/chain.lsh"\nprint(db_password)\n')
    refused(leash(["--error-format", "json", "main.lsh"], cwd=inc), "outside")


def test_include_inside_the_script_directory_and_below_works(inc):
    write(inc / "main.lsh", 'include "lib/ok.lsh"\ninclude "./lib/../lib/ok.lsh"\nprint(helper())\n')
    os.symlink("lib", inc / "alias")  # a symlink that stays inside is fine
    write(inc / "main2.lsh", 'include "alias/ok.lsh"\nprint(helper())\n')
    for main in ["main.lsh", "main2.lsh"]:
        r = leash(["--error-format", "json", inc / main], cwd=inc.parent)  # the cwd does not matter
        assert (r.status, r.out) == (0, "helper\n"), r


def test_include_path_option_opens_a_directory(inc):
    shared = inc.parent / "shared"
    write(shared / "util.lsh", 'fn util()\n  return "util"\nend\n')
    write(inc / "main.lsh", f'include "{shared}/util.lsh"\ninclude "../shared/util.lsh"\nprint(util())\n')
    r = leash(["--error-format", "json", "main.lsh"], cwd=inc)
    refused(r, "outside")
    r = leash(["--error-format", "json", "--include-path", shared, "main.lsh"], cwd=inc)
    assert (r.status, r.out) == (0, "util\n"), r
    # Repeatable; the other directory stays closed.
    write(inc / "main.lsh", 'include "../shared/util.lsh"\ninclude "../outside/config.toml"\n')
    r = leash(["--error-format", "json", "--include-path", shared, "--include-path", inc / "lib", "main.lsh"], cwd=inc)
    refused(r, "config.toml")


def test_include_path_must_be_an_existing_directory(inc):
    for bad in [inc / "nope", inc / "lib" / "ok.lsh"]:
        r = leash(["--error-format", "json", "--include-path", bad, "-e", "x = 1"], cwd=inc)
        assert r.status == 2 and r.diag["error"] == "usage" and "--include-path" in r.diag["message"], r
    r = leash(["--error-format", "json", "--include-path", "-e", "x = 1"], cwd=inc)
    assert r.status == 2, r
    assert "--include-path DIR" in leash(["--help"]).out


def test_allow_files_is_a_read_grant_for_includes(inc):
    write(inc / "main.lsh", 'include "../outside/config.toml"\nprint(db_password)\n')
    r = leash(["--error-format", "json", "--allow-files", "main.lsh"], cwd=inc)
    assert (r.status, r.out) == (0, "hunter2-SECRET\n"), r


def test_include_from_inline_and_stdin_programs_is_beneath_the_working_directory(inc):
    r = leash(["--error-format", "json", "-e", 'include "lib/ok.lsh"\nprint(helper())'], cwd=inc)
    assert (r.status, r.out) == (0, "helper\n"), r
    refused(leash(["--error-format", "json", "-e", 'include "../outside/config.toml"'], cwd=inc), "outside")
    r = leash(["--error-format", "json", "-"], cwd=inc, input='include "lib/ok.lsh"\nprint(helper())\n')
    assert (r.status, r.out) == (0, "helper\n"), r
    refused(leash(["--error-format", "json", "-"], cwd=inc, input='include "../outside/config.toml"\n'), "outside")


def test_include_area_in_check_and_test(inc):
    write(inc / "main.lsh", 'include "../outside/config.toml"\n')
    refused(leash(["--error-format", "json", "check", "main.lsh"], cwd=inc), "outside")
    write(inc / "x_test.lsh", 'include "../outside/config.toml"\nfn test_x()\nend\n')
    r = leash(["--error-format", "json", "test", "x_test.lsh"], cwd=inc)
    assert r.status == 3 and "hunter2" not in r.out + r.err, r
    r = leash(["--error-format", "json", "--include-path", inc.parent / "outside", "test", "x_test.lsh"], cwd=inc)
    assert r.status == 0 and r.out.splitlines()[-1] == "1 passed, 0 failed", r


def test_stdlib_import_is_unaffected(inc):
    r = leash(["--error-format", "json", "-e", 'import path\nprint(path.basename("a/b.txt"))'], cwd="/")
    assert (r.status, r.out) == (0, "b.txt\n"), r


def test_gateway_worker_may_include_from_anywhere_beneath_root(tmp_path):
    from test_cgi import LEASH_CGI, Gateway

    if not LEASH_CGI.exists():
        pytest.skip(f"{LEASH_CGI} is not built")
    gw = Gateway(tmp_path)
    gw.page("lib/common.lsh", 'fn greet()\n  return "hi from lib"\nend\n')
    gw.page("sub/page.lsh", 'import cgi\ninclude "../lib/common.lsh"\ncgi.headers({"Content-Type": "text/plain"})\nprint(greet())\n')
    r = gw.request("sub/page.lsh")
    assert r.status == 200 and r.body == b"hi from lib\n", r.log
    write(tmp_path / "secret.lsh", SECRET)
    gw.page("sub/leak.lsh", 'import cgi\ninclude "../../secret.lsh"\ncgi.headers({})\nprint(db_password)\n')
    r = gw.request("sub/leak.lsh")
    assert r.status == 500 and b"hunter2" not in r.body, r.log
    assert "hunter2" not in r.log and '"kind":"include"' in r.log, r.log


# ---------------------------------------------------------------------------
# 4. FIFOs and directories as the main script, a check argument or a test file
# ---------------------------------------------------------------------------


@pytest.fixture
def fifo_dir(tmp_path):
    os.mkfifo(tmp_path / "fifo.lsh")
    os.mkfifo(tmp_path / "fifo_test.lsh")
    (tmp_path / "folder.lsh").mkdir()
    write(tmp_path / "good.lsh", "x = 1\n")
    return tmp_path


@pytest.mark.parametrize(
    "args, name",
    [
        (["fifo.lsh"], "fifo.lsh"),
        (["--max-time", "1", "fifo.lsh"], "fifo.lsh"),
        (["folder.lsh"], "folder.lsh"),
        (["check", "fifo.lsh"], "fifo.lsh"),
        (["check", "folder.lsh"], "folder.lsh"),
        (["test", "fifo_test.lsh"], "fifo_test.lsh"),
        (["test", "folder.lsh/../fifo_test.lsh"], "fifo_test.lsh"),
    ],
)
def test_non_regular_script_is_a_load_error_at_once(fifo_dir, args, name):
    r = leash(["--error-format", "json", *args], cwd=fifo_dir, timeout=5)
    assert r.status == 3, r
    d = r.diag
    assert (d["error"], d["kind"]) == ("load", "include"), d
    assert d["file"].endswith(name), d
    assert "regular file" in d["message"] or "directory" in d["message"], d


def test_check_goes_on_past_a_fifo(fifo_dir):
    r = leash(["--error-format", "json", "check", "fifo.lsh", "good.lsh"], cwd=fifo_dir, timeout=5)
    assert r.status == 3 and r.out == "good.lsh: capabilities: none\n", r


def test_program_from_a_pipe_still_runs_with_dash(tmp_path):
    r = leash(["-"], input="print(42)\n", cwd=tmp_path)
    assert (r.status, r.out) == (0, "42\n"), r


# ---------------------------------------------------------------------------
# 7. date.format: whole seconds print whole at every magnitude
# ---------------------------------------------------------------------------

MAX_TIME = 8210266876799  # +262142-12-31T23:59:59Z, chrono's last second
MIN_TIME = -8334601228800  # -262143-01-01T00:00:00Z, its first


def civil(t):
    """RFC 3339 text of whole seconds `t`, for any year (proleptic Gregorian)."""
    days, secs = divmod(t, 86400)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y += m <= 2
    ys = f"{y:04d}" if 0 <= y <= 9999 else f"{y:+05d}"
    return f"{ys}-{m:02d}-{d:02d}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}Z"


def magnitudes():
    ts = [0, MAX_TIME, MIN_TIME, MAX_TIME - 1, MIN_TIME + 1]
    for k in range(13):
        for sign in (1, -1):
            for delta in (0, -1, 1):
                ts.append(sign * 10**k + delta)
    for k in range(13):  # 9, 99, ..., and the largest k-digit numbers that are in range
        ts.extend([10**k - 1, -(10**k - 1)])
    return sorted({t for t in ts if MIN_TIME <= t <= MAX_TIME})


def test_civil_helper_agrees_with_known_dates():
    assert civil(0) == "1970-01-01T00:00:00Z"
    assert civil(1709210096) == "2024-02-29T12:34:56Z"
    assert civil(-62135596800) == "0001-01-01T00:00:00Z"
    assert civil(MAX_TIME) == "+262142-12-31T23:59:59Z"
    assert civil(MIN_TIME) == "-262143-01-01T00:00:00Z"


def test_date_format_whole_seconds_at_every_magnitude(tmp_path):
    ts = magnitudes()
    code = "for t in [" + ", ".join(str(t) for t in ts) + "]\n  print(date.format(t))\nend\n"
    r = leash(["--error-format", "json", "-e", code], cwd=tmp_path)
    assert r.status == 0, r
    got = r.out.splitlines()
    assert got == [civil(t) for t in ts]


def test_date_format_the_reported_value(tmp_path):
    r = leash(["-e", f'print(date.format({MAX_TIME}))\nprint(date.format({MAX_TIME}, "%S"))'], cwd=tmp_path)
    assert (r.status, r.out) == (0, "+262142-12-31T23:59:59Z\n59\n"), r
    r = leash(["-e", f"p = date.parts({MAX_TIME})\nprint(p.second, p.year)"], cwd=tmp_path)
    assert (r.status, r.out) == (0, "59 262142\n"), r


def test_date_format_fractions_and_range_ends(tmp_path):
    code = (
        f"print(date.format({MAX_TIME}.5))\n"
        f"print(date.format({MIN_TIME} + 0.5))\n"
        "print(date.format(1e12 + 0.25))\n"
        "print(date.format(-0.000001))\n"
        "print(date.format(0.9999996))\n"
        "try\n"
        f"  date.format({MAX_TIME + 1})\n"
        "catch e\n"
        "  print(e.kind)\n"
        "end\n"
        "try\n"
        f"  date.format({MIN_TIME - 1})\n"
        "catch e\n"
        "  print(e.kind)\n"
        "end\n"
    )
    r = leash(["-e", code], cwd=tmp_path)
    assert r.status == 0, r
    assert r.out.splitlines() == [
        "+262142-12-31T23:59:59.5Z",
        "-262143-01-01T00:00:00.5Z",
        civil(10**12).replace("Z", ".25Z"),
        "1969-12-31T23:59:59.999999Z",
        "1970-01-01T00:00:01Z",
        "value",
        "value",
    ]


# ---------------------------------------------------------------------------
# 9. for ranges whose k * step overflows
# ---------------------------------------------------------------------------


def ok_run(code, tmp_path):
    r = leash(["--error-format", "json", "-e", code], cwd=tmp_path)
    assert r.status == 0, r
    return r.out


@pytest.mark.parametrize(
    "head, want",
    [
        ("for i = 1e308 to -1e308 step -1e308", ["1e+308", "0", "-1e+308"]),
        ("for i = -1e308 to 1e308 step 1e308", ["-1e+308", "0", "1e+308"]),
        ("for i = -1.7976931348623157e308 to 1.7976931348623157e308 step 1.7976931348623157e308",
         ["-1.7976931348623157e+308", "0", "1.7976931348623157e+308"]),
        ("for i = 1e308 to 1.7976931348623157e308 step 1e308", ["1e+308"]),
        ("for i = 1.5e308 to -1.5e308 step -1e308", ["1.5e+308", "5e+307", "-5e+307", "-1.5e+308"]),
    ],
)
def test_for_range_near_the_largest_numbers(tmp_path, head, want):
    assert ok_run(f"{head}\n  print(i)\nend\n", tmp_path).splitlines() == want


def test_for_range_common_cases_unchanged(tmp_path):
    out = ok_run("for i = 0 to 1 step 0.1\n  write(i, \" \")\nend\nprint()\n"
                 "for i = 3 to 1 step -1\n  write(i, \" \")\nend\nprint()\n"
                 "for i = 1 to 0\n  print(\"never\")\nend\n", tmp_path)
    assert out == "0 0.1 0.2 0.30000000000000004 0.4 0.5 0.6000000000000001 0.7000000000000001 0.8 0.9 1 \n3 2 1 \n"


# ---------------------------------------------------------------------------
# 10. stdin from a directory
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["stdin.read_line()", "stdin.read(10)"])
def test_stdin_from_a_directory_is_an_io_error(tmp_path, call):
    d = os.open(tmp_path, os.O_RDONLY)  # as the shell's `< DIR` does; read() gives EISDIR
    try:
        p = subprocess.run(
            [str(LEASH), "--error-format", "json", "-e",
             f'try\n  v = {call}\n  print("value", v)\ncatch e\n  print(e.kind, e.message)\nend\n'
             f'try\n  v = {call}\n  print("value", v)\ncatch e\n  print(e.kind)\nend\n'],
            stdin=d, capture_output=True, timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("hung")
    finally:
        os.close(d)
    assert p.returncode == 0, p
    lines = p.stdout.decode().splitlines()
    assert lines == [f"io cannot read stdin: {os.strerror(21)}", "io"], lines


def test_stdin_from_a_directory_uncaught_is_status_1(tmp_path):
    d = os.open(tmp_path, os.O_RDONLY)
    try:
        p = subprocess.run([str(LEASH), "--error-format", "json", "-e", "print(stdin.read_line())"],
                           stdin=d, capture_output=True, timeout=TIMEOUT)
    finally:
        os.close(d)
    assert p.returncode == 1 and p.stdout == b"", p
    assert diags(p.stderr.decode())[0]["kind"] == "io"


def test_stdin_end_of_input_is_still_nil(tmp_path):
    r = leash(["-e", "print(stdin.read_line(), stdin.read(3))"], input="", cwd=tmp_path)
    assert (r.status, r.out) == (0, "nil nil\n"), r
    r = leash(["-e", "print(stdin.read_line(), stdin.read_line())"], input="last", cwd=tmp_path)
    assert (r.status, r.out) == (0, "last nil\n"), r


# ---------------------------------------------------------------------------
# The parser's backtracking (found by the `layout` fuzz target, 2026-12-02): a line
# that does not parse, with nested calls whose arguments hold operator chains, made the
# combinator parser try exponentially many readings (a 568-byte input ran 36 s in the
# fuzz build, 6 s in release; depth 6 below ran for minutes). Each statement now has
# parse fuel in proportion to its tokens; out of fuel, it is one syntax error.
# ---------------------------------------------------------------------------

TANGLE = "q(a" + "-" * 46 + "b("


def tangled(depth, inner="%"):
    return "x = " + TANGLE * depth + inner + "))" * depth + "\n"


@pytest.mark.parametrize("depth", [4, 6, 8, 12, 16])
def test_a_tangled_statement_is_one_syntax_error_at_once(tmp_path, depth):
    p = write(tmp_path / "t.lsh", tangled(depth) + "print(1)\n")
    # The preexec cap keeps a regression from taking minutes of CPU (or memory).
    r = leash(["--error-format", "json", "check", p], timeout=20)
    assert r.status == 3, r.err
    ds = r.json_lines()
    assert [(d["kind"], d["line"]) for d in ds] == [("syntax", 1)], ds
    if depth >= 6:
        assert "too tangled to parse" in ds[0]["message"], ds


def test_the_same_statement_without_the_error_parses(tmp_path):
    # (Depth 2: 46 unary minuses per level soon pass the expression depth limit.)
    p = write(tmp_path / "t.lsh", "fn q(a)\n  return a\nend\nfn b(c)\n  return c\nend\na = 1\n" + tangled(2, "7")
              + "y = [" + ", ".join(f"-{i} - -{i}" for i in range(150)) + "]\nprint(x, len(y))\n")
    r = leash([p])
    assert (r.status, r.out) == (0, "9 150\n"), r.err  # 1 - -(1 - -7)


def test_tangled_interpolation_and_many_tangled_statements_stay_fast(tmp_path):
    inter = 'x = "${' + TANGLE * 8 + "%" + "))" * 8 + '}"\n'
    r = leash(["check", write(tmp_path / "i.lsh", inter)])
    assert r.status == 3 and "too tangled to parse" in r.err, r.err
    # Twenty-five statements of 12 KB each (loading stops after 20 errors): about a
    # second of parsing in all, not hours.
    big = "x = " + ("q(a" + "-" * 200 + "b(\n") * 60 + "%" + ")" * 120 + "\n"
    r = leash(["check", write(tmp_path / "b.lsh", big * 25)], timeout=30)
    assert r.status == 3 and r.err.count("too tangled to parse") == 20, r.err[-2000:]


def test_the_fuzz_input_that_found_it_loads_at_once(tmp_path):
    src = (ROOT / "fuzz" / "corpus" / "layout" / "tangled-2026-12-02").read_bytes()
    (tmp_path / "f.lsh").write_bytes(src)
    r = leash(["check", tmp_path / "f.lsh"], timeout=20)
    assert r.status == 3, r.err
