"""file.* builtins behind --allow-files (SPEC 5, 8, 9, 10; issue: file system capability).

Covers every file.* builtin except the streaming readers (test_readers.py), the safety
rules (directories, /dev/zero and /dev/null, real FIFOs, real symlinks, existing
destinations), the 16 MiB file-write budget at N and N+1 across write, append and copy,
the permission error of every file.* and dir.* builtin without the flag, and
`leash check` reporting `capabilities: files`.

Every run has a timeout: a FIFO or device that makes leash block shows up as a failure
that says so, not as a stuck suite.
"""
import errno
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import LEASH, run
from conftest import FILES, HANG_TIMEOUT, caught, err_of, files

MIB = 1024 * 1024


def strerror(code):
    return os.strerror(code)


def tree(root):
    """Snapshot of a directory: relative path -> ('file', bytes) / ('dir',) / ('link', target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir",)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", f.read(), os.stat(p).st_mtime_ns)
    return out


@pytest.fixture
def work(tmp_path):
    """A data directory beside the script (the script runs with cwd = tmp_path)."""
    d = tmp_path / "d"
    d.mkdir()
    return d


# ---------------------------------------------------------------------------
# file.read / file.write / file.append
# ---------------------------------------------------------------------------


def test_write_then_read_round_trip(script, work):
    r = files(script, 'print(file.write("d/a.txt", "hello\\nworld"))\nprint(file.read("d/a.txt"))')
    assert (r.status, r.out) == (0, "nil\nhello\nworld\n"), r
    assert (work / "a.txt").read_bytes() == b"hello\nworld"


def test_write_truncates_and_replaces(script, work):
    (work / "a.txt").write_bytes(b"a much longer old content\n")
    r = files(script, 'file.write("d/a.txt", "new")')
    assert r.status == 0, r
    assert (work / "a.txt").read_bytes() == b"new"


def test_write_empty_string_creates_empty_file(script, work):
    r = files(script, 'file.write("d/e.txt", "")\nprint(file.read("d/e.txt") == "", file.size("d/e.txt"))')
    assert (r.status, r.out) == (0, "true 0\n"), r
    assert (work / "e.txt").read_bytes() == b""


def test_binary_bytes_round_trip(script, work):
    data = bytes(range(256)) * 3
    (work / "bin").write_bytes(data)
    r = files(script, 's = file.read("d/bin")\nprint(len(s))\nfile.write("d/bin2", s)')
    assert (r.status, r.out) == (0, "768\n"), r
    assert (work / "bin2").read_bytes() == data


def test_write_escapes_reach_disk_exactly(script, work):
    r = files(script, 'file.write("d/x", "a\\0b\\xffc\\r\\n")')
    assert r.status == 0, r
    assert (work / "x").read_bytes() == b"a\x00b\xffc\r\n"


def test_append_creates_then_appends(script, work):
    r = files(script, 'file.append("d/log", "one\\n")\nfile.append("d/log", "two\\n")\nprint(file.read("d/log"))')
    assert (r.status, r.out) == (0, "one\ntwo\n\n"), r
    assert (work / "log").read_bytes() == b"one\ntwo\n"


def test_append_keeps_existing_content(script, work):
    (work / "log").write_bytes(b"old\n")
    r = files(script, 'file.append("d/log", "new\\n")')
    assert r.status == 0, r
    assert (work / "log").read_bytes() == b"old\nnew\n"


def test_read_empty_file(script, work):
    (work / "empty").write_bytes(b"")
    r = files(script, 's = file.read("d/empty")\nprint(type(s), len(s))')
    assert (r.status, r.out) == (0, "string 0\n"), r


def test_read_missing_file_is_io_error_with_os_reason(script):
    r = files(script, caught('file.read("d/nope.txt")'))
    kind, msg = err_of(r)
    assert kind == "io"
    assert strerror(errno.ENOENT) in msg and "nope.txt" in msg


def test_uncaught_io_error_exits_1_with_location(script):
    r = files(script, 'x = 1\nfile.read("d/nope.txt")\n')
    assert r.status == 1, r
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("runtime", "io", 2)
    assert d["file"].endswith("t.lsh")
    assert strerror(errno.ENOENT) in d["message"]


def test_write_into_missing_directory_is_io_error(script, work):
    r = files(script, caught('file.write("d/no/such/dir.txt", "x")'))
    kind, msg = err_of(r)
    assert kind == "io" and strerror(errno.ENOENT) in msg


def test_read_at_string_limit_passes(script, work):
    # A string holds at most 1 MiB: a file of exactly 1 MiB is readable.
    (work / "m").write_bytes(b"a" * MIB)
    r = files(script, 's = file.read("d/m")\nprint(len(s))')
    assert (r.status, r.out) == (0, f"{MIB}\n"), r


def test_read_past_string_limit_is_string_limit(script, work):
    (work / "m").write_bytes(b"a" * (MIB + 1))
    r = files(script, 'try\n  s = file.read("d/m")\ncatch e\n  print("caught")\nend')
    assert r.status == 4, r
    assert "caught" not in r.out
    assert (r.diag["error"], r.diag["kind"]) == ("limit", "string")


def test_paths_are_relative_to_working_directory(tmp_path):
    sdir = tmp_path / "scripts"
    wdir = tmp_path / "wd"
    sdir.mkdir()
    wdir.mkdir()
    (sdir / "s.lsh").write_text('file.write("out.txt", "here")\nprint(file.read("in.txt"))\n')
    (wdir / "in.txt").write_text("input")
    r = run(["--allow-files", "--error-format", "json", sdir / "s.lsh"], cwd=wdir, timeout=HANG_TIMEOUT)
    assert (r.status, r.out) == (0, "input\n"), r
    assert (wdir / "out.txt").read_text() == "here"
    assert not (sdir / "out.txt").exists()


def test_wrong_argument_types_are_type_errors(script):
    r = files(script, caught('file.read(1)'))
    assert err_of(r)[0] == "type"
    r = files(script, caught('file.write("d/x", 5)'))
    assert err_of(r)[0] == "type"


def test_wrong_arity_is_load_error(script):
    r = files(script, 'fn never()\n  file.write("x")\nend\n')
    assert r.status == 3, r
    assert (r.diag["error"], r.diag["kind"], r.diag["line"]) == ("load", "arity", 2)


# ---------------------------------------------------------------------------
# file.exists / file.remove / file.size / file.stat
# ---------------------------------------------------------------------------


def test_exists(script, work):
    (work / "f").write_text("x")
    (work / "sub").mkdir()
    r = files(script, 'print(file.exists("d/f"), file.exists("d/sub"), file.exists("d/missing"))')
    assert (r.status, r.out) == (0, "true true false\n"), r


def test_remove_file(script, work):
    (work / "f").write_text("x")
    r = files(script, 'print(file.remove("d/f"))\nprint(file.exists("d/f"))')
    assert (r.status, r.out) == (0, "nil\nfalse\n"), r
    assert not (work / "f").exists()


def test_remove_missing_is_io_error(script):
    r = files(script, caught('file.remove("d/missing")'))
    kind, msg = err_of(r)
    assert kind == "io" and strerror(errno.ENOENT) in msg


def test_remove_directory_is_io_error_and_keeps_it(script, work):
    (work / "sub").mkdir()
    (work / "sub" / "keep").write_text("k")
    r = files(script, caught('file.remove("d/sub")'))
    kind, msg = err_of(r)
    assert kind == "io" and "directory" in msg
    assert (work / "sub" / "keep").read_text() == "k"


def test_remove_symlink_removes_the_link_not_the_target(script, work):
    (work / "target").write_text("t")
    os.symlink("target", work / "link")
    r = files(script, 'file.remove("d/link")')
    assert r.status == 0, r
    assert not os.path.lexists(work / "link")
    assert (work / "target").read_text() == "t"


def test_size(script, work):
    (work / "f").write_bytes(b"x" * 12345)
    (work / "e").write_bytes(b"")
    r = files(script, 'print(file.size("d/f"), file.size("d/e"))')
    assert (r.status, r.out) == (0, "12345 0\n"), r


def test_size_missing_and_directory_are_io_errors(script, work):
    (work / "sub").mkdir()
    kind, msg = err_of(files(script, caught('file.size("d/missing")')))
    assert kind == "io" and strerror(errno.ENOENT) in msg
    kind, msg = err_of(files(script, caught('file.size("d/sub")')))
    assert kind == "io" and "directory" in msg


def test_stat_regular_file(script, work):
    p = work / "f"
    p.write_bytes(b"abcde")
    r = files(script, 's = file.stat("d/f")\nprint(keys(s))\nprint(s.size, s.is_file, s.is_dir, s.is_symlink)\nprint(s.modified)')
    assert r.status == 0, r
    lines = r.out.splitlines()
    assert sorted(json.loads(lines[0])) == ["is_dir", "is_file", "is_symlink", "modified", "size"]
    assert lines[1] == "5 true false false"
    assert abs(float(lines[2]) - os.stat(p).st_mtime) < 1e-3


def test_stat_directory(script, work):
    (work / "sub").mkdir()
    r = files(script, 's = file.stat("d/sub")\nprint(s.is_file, s.is_dir, s.is_symlink)')
    assert (r.status, r.out) == (0, "false true false\n"), r


def test_stat_does_not_follow_final_symlink(script, work):
    (work / "target").write_bytes(b"x" * 100)
    os.symlink("target", work / "link")
    os.symlink("nowhere", work / "dangling")
    r = files(script, 'for n in ["d/link", "d/dangling"]\n  s = file.stat(n)\n  print(s.size, s.is_file, s.is_dir, s.is_symlink)\nend')
    assert r.status == 0, r
    assert r.out.splitlines() == [
        f"{len('target')} false false true",
        f"{len('nowhere')} false false true",
    ]


def test_stat_missing_is_io_error(script):
    kind, msg = err_of(files(script, caught('file.stat("d/missing")')))
    assert kind == "io" and strerror(errno.ENOENT) in msg


# ---------------------------------------------------------------------------
# file.copy / file.rename
# ---------------------------------------------------------------------------


def test_copy_copies_bytes_exactly(script, work):
    data = os.urandom(200_000)  # several 64 KiB chunks and a partial one
    (work / "src").write_bytes(data)
    r = files(script, 'print(file.copy("d/src", "d/dst"))')
    assert (r.status, r.out) == (0, "nil\n"), r
    assert (work / "dst").read_bytes() == data
    assert (work / "src").read_bytes() == data


def test_copy_empty_file(script, work):
    (work / "src").write_bytes(b"")
    r = files(script, 'file.copy("d/src", "d/dst")')
    assert r.status == 0, r
    assert (work / "dst").read_bytes() == b""


def test_copy_missing_source_creates_nothing(script, work):
    kind, msg = err_of(files(script, caught('file.copy("d/missing", "d/dst")')))
    assert kind == "io" and strerror(errno.ENOENT) in msg
    assert not os.path.lexists(work / "dst")


def test_copy_refuses_existing_destination(script, work):
    (work / "src").write_bytes(b"new")
    (work / "dst").write_bytes(b"old")
    kind, msg = err_of(files(script, caught('file.copy("d/src", "d/dst")')))
    assert kind == "io" and strerror(errno.EEXIST) in msg
    assert (work / "dst").read_bytes() == b"old"


def test_copy_refuses_dangling_symlink_destination(script, work):
    # O_EXCL semantics: a destination that is a symlink (even a dangling one) exists;
    # the link's target must not be created through it.
    (work / "src").write_bytes(b"data")
    os.symlink("created-through-link", work / "dst")
    kind, msg = err_of(files(script, caught('file.copy("d/src", "d/dst")')))
    assert kind == "io" and strerror(errno.EEXIST) in msg
    assert not os.path.lexists(work / "created-through-link")
    assert os.readlink(work / "dst") == "created-through-link"


def test_copy_refuses_symlink_to_existing_file_as_destination(script, work):
    (work / "src").write_bytes(b"data")
    (work / "victim").write_bytes(b"victim")
    os.symlink("victim", work / "dst")
    kind, _ = err_of(files(script, caught('file.copy("d/src", "d/dst")')))
    assert kind == "io"
    assert (work / "victim").read_bytes() == b"victim"


def test_copy_refuses_directory_destination(script, work):
    (work / "src").write_bytes(b"data")
    (work / "sub").mkdir()
    kind, _ = err_of(files(script, caught('file.copy("d/src", "d/sub")')))
    assert kind == "io"
    assert list((work / "sub").iterdir()) == []


def test_rename_moves_file(script, work):
    (work / "a").write_bytes(b"content")
    r = files(script, 'print(file.rename("d/a", "d/b"))\nprint(file.exists("d/a"), file.read("d/b"))')
    assert (r.status, r.out) == (0, "nil\nfalse content\n"), r
    assert not (work / "a").exists()
    assert (work / "b").read_bytes() == b"content"


def test_rename_missing_source_is_io_error(script, work):
    kind, msg = err_of(files(script, caught('file.rename("d/missing", "d/b")')))
    assert kind == "io" and strerror(errno.ENOENT) in msg
    assert not (work / "b").exists()


def test_rename_refuses_existing_destination(script, work):
    (work / "a").write_bytes(b"a")
    (work / "b").write_bytes(b"b")
    kind, msg = err_of(files(script, caught('file.rename("d/a", "d/b")')))
    assert kind == "io" and strerror(errno.EEXIST) in msg
    assert (work / "a").read_bytes() == b"a"
    assert (work / "b").read_bytes() == b"b"


def test_rename_refuses_dangling_symlink_destination(script, work):
    (work / "a").write_bytes(b"a")
    os.symlink("nowhere", work / "b")
    kind, msg = err_of(files(script, caught('file.rename("d/a", "d/b")')))
    assert kind == "io" and strerror(errno.EEXIST) in msg
    assert (work / "a").read_bytes() == b"a"
    assert os.readlink(work / "b") == "nowhere"


# ---------------------------------------------------------------------------
# Safety rules: symlink sources
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["file", "dangling", "dir"])
def test_copy_refuses_symlink_source(script, work, target):
    if target == "file":
        (work / "real").write_bytes(b"secret")
    elif target == "dir":
        (work / "real").mkdir()
    os.symlink("real", work / "link")
    kind, msg = err_of(files(script, caught('file.copy("d/link", "d/dst")')))
    assert kind == "io"
    assert "link" in msg.lower()
    assert not os.path.lexists(work / "dst")


@pytest.mark.parametrize("target", ["file", "dangling"])
def test_rename_refuses_symlink_source(script, work, target):
    if target == "file":
        (work / "real").write_bytes(b"secret")
    os.symlink("real", work / "link")
    kind, msg = err_of(files(script, caught('file.rename("d/link", "d/dst")')))
    assert kind == "io"
    assert "link" in msg.lower()
    assert os.path.islink(work / "link") and os.readlink(work / "link") == "real"
    assert not os.path.lexists(work / "dst")


def test_read_and_write_follow_symlinks_to_regular_files(script, work):
    # Not a safety rule: reading and writing through a link to a regular file work.
    (work / "real").write_bytes(b"old")
    os.symlink("real", work / "link")
    r = files(script, 'print(file.read("d/link"))\nfile.write("d/link", "new")')
    assert (r.status, r.out) == (0, "old\n"), r
    assert (work / "real").read_bytes() == b"new"


# ---------------------------------------------------------------------------
# Safety rules: only regular files are read or written
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        'file.read("d/sub")',
        'file.write("d/sub", "x")',
        'file.append("d/sub", "x")',
        'file.copy("d/sub", "d/dst")',
        'file.open("d/sub")',
    ],
)
def test_directory_is_io_error(script, work, call):
    (work / "sub").mkdir()
    before = tree(work)
    r = files(script, caught(call), opts=["--stats"])
    kind, msg = err_of(r)
    assert kind == "io", msg
    assert tree(work) == before
    assert r.stats["file_write_bytes"] == 0


@pytest.mark.parametrize(
    "call",
    [
        'file.read("/dev/zero")',
        'file.open("/dev/zero")',
        'file.copy("/dev/zero", "d/dst")',
        'file.write("/dev/null", "x")',
        'file.append("/dev/null", "x")',
        'file.write("/dev/zero", "x")',
    ],
)
def test_device_is_io_error_never_a_hang(script, work, call):
    r = files(script, caught(call), opts=["--stats"])
    kind, msg = err_of(r)
    assert kind == "io", msg
    assert "regular" in msg or "device" in msg.lower(), msg
    assert not os.path.lexists(work / "dst")
    assert r.stats["file_write_bytes"] == 0


@pytest.fixture
def fifo(work):
    p = work / "fifo"
    os.mkfifo(p)
    return p


@pytest.mark.parametrize(
    "call",
    [
        'file.read("d/fifo")',
        'file.write("d/fifo", "x")',
        'file.append("d/fifo", "x")',
        'file.open("d/fifo")',
        'file.copy("d/fifo", "d/dst")',
    ],
)
def test_fifo_without_peer_is_io_error_never_a_hang(script, work, fifo, call):
    start = time.monotonic()
    r = files(script, caught(call))
    kind, msg = err_of(r)
    assert kind == "io", msg
    assert time.monotonic() - start < HANG_TIMEOUT
    assert not os.path.lexists(work / "dst")
    assert os.path.exists(fifo)


@pytest.mark.parametrize(
    "call",
    [
        'file.read("d/fifo")',
        'file.write("d/fifo", "written")',
        'file.append("d/fifo", "written")',
        'file.open("d/fifo")',
        'file.copy("d/fifo", "d/dst")',
    ],
)
def test_fifo_with_peer_is_io_error_and_moves_no_byte(script, work, fifo, call):
    # The test holds both ends open with bytes waiting, so an open would succeed and a
    # read or write could proceed: leash must still refuse, without moving a byte.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, b"waiting")
        r = files(script, caught(call))
        kind, msg = err_of(r)
        assert kind == "io", msg
        assert "regular" in msg, msg
        assert os.read(fd, 100) == b"waiting"  # nothing consumed, nothing added
        with pytest.raises(BlockingIOError):
            os.read(fd, 100)
    finally:
        os.close(fd)
    assert not os.path.lexists(work / "dst")


def test_io_error_kinds_are_catchable_and_run_continues(script, work):
    (work / "sub").mkdir()
    code = (
        'n = 0\n'
        'for p in ["d/sub", "/dev/zero", "d/missing"]\n'
        '  try\n    file.read(p)\n  catch e\n    n += 1\n    print(e.kind, e.line)\n  end\nend\n'
        'print("done", n)\n'
    )
    r = files(script, code)
    assert (r.status, r.out) == (0, "io 4\nio 4\nio 4\ndone 3\n"), r


# ---------------------------------------------------------------------------
# Atomicity and chunking, observed with strace (skipped without it)
# ---------------------------------------------------------------------------


def _strace(tmp_path, code, trace):
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    script_path = tmp_path / "s.lsh"
    script_path.write_text(code)
    log = tmp_path / "strace.log"
    try:
        p = subprocess.run(
            ["strace", "-f", "-qq", "-e", f"trace={trace}", "-o", str(log), str(LEASH),
             "--allow-files", str(script_path)],
            cwd=tmp_path, capture_output=True, timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("leash under strace did not finish")
    if not log.exists() or "PTRACE" in p.stderr.decode(errors="replace") or "Operation not permitted" in p.stderr.decode(errors="replace"):
        pytest.skip(f"strace not usable here: {p.stderr[:200]!r}")
    assert p.returncode == 0, p
    return log.read_text()


def test_copy_and_rename_refuse_existing_destination_atomically(tmp_path):
    (tmp_path / "src").write_bytes(b"data")
    log = _strace(
        tmp_path,
        'file.copy("src", "dst")\nfile.rename("dst", "moved")\n',
        "open,openat,openat2,creat,rename,renameat,renameat2,link,linkat",
    )
    dst_opens = [l for l in log.splitlines() if re.match(r"^\d+\s+(open\w*|creat)\(", l) and '"dst"' in l]
    assert dst_opens, log
    for l in dst_opens:
        # the destination is only ever created with O_CREAT|O_EXCL: no separate check
        assert "O_CREAT" in l and "O_EXCL" in l, l
    renames = [l for l in log.splitlines() if re.match(r"^\d+\s+(rename\w*|link\w*)\(", l)]
    assert renames, log
    for l in renames:
        assert "renameat2(" in l and "RENAME_NOREPLACE" in l, l


def test_copy_moves_bounded_chunks(tmp_path):
    (tmp_path / "src").write_bytes(b"z" * (4 * MIB))
    log = _strace(tmp_path, 'file.copy("src", "dst")\n', "read,write,pread64,pwrite64,copy_file_range,sendfile,splice")
    sizes = []
    for l in log.splitlines():
        if re.match(r"^\d+\s+(read|write|pread64|pwrite64|copy_file_range|sendfile|splice)\(", l) and "= " in l:
            try:
                sizes.append(int(l.rsplit("= ", 1)[1].split()[0]))
            except ValueError:
                pass
    assert sizes and max(sizes) <= MIB, f"largest single transfer {max(sizes)} bytes"
    assert (tmp_path / "dst").stat().st_size == 4 * MIB


def test_copy_memory_stays_bounded(tmp_path):
    # Peak RSS of a 16 MiB copy stays well below the file size (measured per child).
    (tmp_path / "src").write_bytes(b"q" * (16 * MIB))
    (tmp_path / "c.lsh").write_text('file.copy("src", "dst")\n')
    (tmp_path / "n.lsh").write_text('x = 1\n')
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    leash = str(LEASH)

    def rss(script_name):
        p = subprocess.run(["python3", "-c", probe, leash, "--allow-files", script_name],
                           cwd=tmp_path, capture_output=True, timeout=30, check=True)
        return int(p.stdout.split()[-1])  # KiB

    base = rss("n.lsh")
    copy = rss("c.lsh")
    assert (tmp_path / "dst").stat().st_size == 16 * MIB
    assert copy - base < 8 * 1024, f"copy peak RSS {copy} KiB vs baseline {base} KiB"


# ---------------------------------------------------------------------------
# Budget: 16 MiB of file writes per run (write, append, copy)
# ---------------------------------------------------------------------------

MIB_STR = 's = repeat("a", 1048576)\n'


def test_write_budget_exactly_16_mib_passes(script, work):
    code = MIB_STR + 'for i = 1 to 16\n  file.append("d/big", s)\nend\nprint("done")\n'
    r = files(script, code, opts=["--stats"])
    assert (r.status, r.out) == (0, "done\n"), r
    assert r.stats["file_write_bytes"] == 16 * MIB
    assert (work / "big").stat().st_size == 16 * MIB


def test_write_budget_one_byte_more_is_fatal_and_reaches_no_disk(script, work):
    code = (
        MIB_STR
        + 'for i = 1 to 16\n  file.append("d/big", s)\nend\nprint("sixteen")\n'
        + 'try\n  file.append("d/big", "b")\ncatch e\n  print("caught")\nend\nprint("after")\n'
    )
    r = files(script, code, opts=["--stats"])
    assert r.status == 4, r
    assert r.out == "sixteen\n"
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("limit", "file_writes", 7)
    assert r.stats["file_write_bytes"] == 16 * MIB
    assert (work / "big").stat().st_size == 16 * MIB
    with open(work / "big", "rb") as f:
        f.seek(-1, 2)
        assert f.read() == b"a"


def test_write_budget_counts_every_write_even_when_truncating(script, work):
    # 16 writes of 1 MiB to the same file use the whole budget although the disk holds
    # 1 MiB; the 17th write is refused before it truncates anything.
    code = (
        MIB_STR + 'for i = 1 to 16\n  file.write("d/one", s)\nend\nprint("ok")\n'
        + 'file.write("d/one", "x")\n'
    )
    r = files(script, code, opts=["--stats"])
    assert r.status == 4 and r.out == "ok\n", r
    assert r.diag["kind"] == "file_writes"
    assert r.stats["file_write_bytes"] == 16 * MIB
    assert (work / "one").read_bytes() == b"a" * MIB


def test_write_budget_crossing_write_is_refused_whole(script, work):
    # 15.5 MiB used; a 1 MiB write would cross: none of its bytes reach the disk, and a
    # file it would have created is not created.
    code = (
        MIB_STR + 'h = repeat("h", 524288)\n'
        'for i = 1 to 15\n  file.append("d/big", s)\nend\nfile.append("d/big", h)\n'
        'file.write("d/new", s)\n'
    )
    r = files(script, code, opts=["--stats"])
    assert r.status == 4 and r.diag["kind"] == "file_writes", r
    assert r.stats["file_write_bytes"] == 15 * MIB + MIB // 2
    assert (work / "big").stat().st_size == 15 * MIB + MIB // 2
    assert not (work / "new").exists() or (work / "new").stat().st_size == 0


def test_write_budget_crossing_write_leaves_existing_file_intact(script, work):
    (work / "keep").write_bytes(b"precious")
    code = MIB_STR + 'for i = 1 to 16\n  file.append("d/big", s)\nend\nfile.write("d/keep", "y")\n'
    r = files(script, code)
    assert r.status == 4 and r.diag["kind"] == "file_writes", r
    assert (work / "keep").read_bytes() == b"precious"


def test_write_budget_shared_by_write_append_and_copy(script, work):
    (work / "four").write_bytes(b"c" * (4 * MIB))
    code = (
        MIB_STR
        + 'for i = 1 to 8\n  file.write("d/w" .. i, s)\nend\n'
        + 'for i = 1 to 4\n  file.append("d/ap", s)\nend\n'
        + 'file.copy("d/four", "d/cp")\nprint("sixteen")\n'
        + 'file.copy("d/w1", "d/cp2")\n'
    )
    r = files(script, code, opts=["--stats"])
    assert r.status == 4 and r.out == "sixteen\n", r
    assert (r.diag["kind"], r.diag["line"]) == ("file_writes", 10)
    assert r.stats["file_write_bytes"] == 16 * MIB
    assert (work / "cp").stat().st_size == 4 * MIB
    assert not (work / "cp2").exists() or (work / "cp2").stat().st_size == 0


def test_copy_of_exactly_16_mib_passes(script, work):
    (work / "src").write_bytes(b"s" * (16 * MIB))
    r = files(script, 'file.copy("d/src", "d/dst")\nprint("ok")', opts=["--stats"])
    assert (r.status, r.out) == (0, "ok\n"), r
    assert r.stats["file_write_bytes"] == 16 * MIB
    assert (work / "dst").stat().st_size == 16 * MIB


def test_copy_of_16_mib_plus_one_is_fatal_and_writes_nothing(script, work):
    (work / "src").write_bytes(b"s" * (16 * MIB + 1))
    r = files(script, 'try\n  file.copy("d/src", "d/dst")\ncatch e\n  print("caught")\nend', opts=["--stats"])
    assert r.status == 4, r
    assert "caught" not in r.out
    assert (r.diag["error"], r.diag["kind"]) == ("limit", "file_writes")
    assert r.stats["file_write_bytes"] <= 16 * MIB
    dst = work / "dst"
    assert not dst.exists() or dst.stat().st_size <= 16 * MIB


def test_copy_after_full_budget_one_byte_is_fatal(script, work):
    (work / "one").write_bytes(b"1")
    code = MIB_STR + 'for i = 1 to 16\n  file.append("d/big", s)\nend\nfile.copy("d/one", "d/dst")\n'
    r = files(script, code)
    assert r.status == 4 and r.diag["kind"] == "file_writes", r
    assert not (work / "dst").exists() or (work / "dst").stat().st_size == 0


def test_copy_of_empty_file_fits_a_full_budget(script, work):
    (work / "empty").write_bytes(b"")
    code = MIB_STR + 'for i = 1 to 16\n  file.append("d/big", s)\nend\nfile.copy("d/empty", "d/dst")\nprint("ok")\n'
    r = files(script, code)
    assert (r.status, r.out) == (0, "ok\n"), r


def test_failed_writes_are_not_charged(script, work):
    # io errors move no bytes, so they use no budget: 20 refused 1 MiB writes, then a
    # full 16 MiB still fits.
    (work / "sub").mkdir()
    code = (
        MIB_STR
        + 'for i = 1 to 20\n  try\n    file.write("d/sub", s)\n  catch e\n  end\nend\n'
        + 'for i = 1 to 16\n  file.append("d/big", s)\nend\nprint("ok")\n'
    )
    r = files(script, code, opts=["--stats"])
    assert (r.status, r.out) == (0, "ok\n"), r
    assert r.stats["file_write_bytes"] == 16 * MIB


def test_stats_count_file_write_bytes_exactly(script, work):
    (work / "src").write_bytes(b"x" * 1000)
    code = 'file.write("d/a", "12345")\nfile.append("d/a", "678")\nfile.copy("d/src", "d/b")\n'
    r = files(script, code, opts=["--stats"])
    assert r.status == 0, r
    assert r.stats["file_write_bytes"] == 5 + 3 + 1000
    assert r.stats["file_read_bytes"] == 0


# ---------------------------------------------------------------------------
# Permission: every file.* and dir.* builtin is refused without --allow-files
# ---------------------------------------------------------------------------

# The reading builtins (`--allow-read` is enough for them, SPEC 9).
READ_BUILTINS = {"file.read", "file.exists", "file.size", "file.stat", "file.open", "file.read_line", "file.close", "dir.list"}

GATED_CALLS = {
    "file.read": 'file.read("d/victim")',
    "file.write": 'file.write("d/victim", "changed")',
    "file.append": 'file.append("d/victim", "more")',
    "file.exists": 'file.exists("d/victim")',
    "file.remove": 'file.remove("d/victim")',
    "file.copy": 'file.copy("d/victim", "d/copy")',
    "file.rename": 'file.rename("d/victim", "d/moved")',
    "file.size": 'file.size("d/victim")',
    "file.stat": 'file.stat("d/victim")',
    "file.open": 'file.open("d/victim")',
    "file.read_line": "file.read_line(nil)",
    "file.close": "file.close(nil)",
    "dir.list": 'dir.list("d")',
    "dir.create": 'dir.create("d/newdir")',
    "dir.remove": 'dir.remove("d/emptydir")',
}


def _victims(work):
    (work / "victim").write_bytes(b"original")
    (work / "emptydir").mkdir()
    os.symlink("victim", work / "link")


@pytest.mark.parametrize("name", sorted(GATED_CALLS))
def test_refused_without_flag_catchable_and_touches_nothing(script, work, name):
    _victims(work)
    before = tree(work)
    r = script(caught(GATED_CALLS[name]), opts=["--stats"], timeout=HANG_TIMEOUT)
    kind, msg = err_of(r)
    assert kind == "permission"
    assert "--allow-files" in msg and name in msg
    assert tree(work) == before
    assert r.stats["file_write_bytes"] == 0


@pytest.mark.parametrize("name", sorted(GATED_CALLS))
def test_refused_without_flag_uncaught_exits_1(script, work, name):
    _victims(work)
    before = tree(work)
    r = script(f"x = 1\n{GATED_CALLS[name]}\nprint(\"after\")\n", timeout=HANG_TIMEOUT)
    assert r.status == 1, r
    assert "after" not in r.out
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("runtime", "permission", 2)
    assert "--allow-files" in d["message"]
    assert tree(work) == before


def test_permission_error_map_fields(script, work):
    _victims(work)
    r = script('try\n  file.read("d/victim")\ncatch e\n  print(e.kind, e.line, e.file)\nend')
    assert r.status == 0, r
    kind, line, fname = r.out.split()
    assert (kind, line) == ("permission", "2") and fname.endswith("t.lsh")


def test_other_flags_do_not_grant_files(script, work):
    _victims(work)
    r = script(caught('file.read("d/victim")'), opts=["--allow-db"])
    assert err_of(r)[0] == "permission"


# ---------------------------------------------------------------------------
# leash check: capabilities found statically
# ---------------------------------------------------------------------------


def _check(tmp_path, *names, files_=None):
    for n, code in (files_ or {}).items():
        (tmp_path / n).write_text(code)
    return run(["check", *[tmp_path / n for n in names]], cwd=tmp_path, timeout=HANG_TIMEOUT)


def test_check_reports_files_capability(tmp_path):
    # SPEC 9: `read` instead of `files` when the code only reads.
    r = _check(tmp_path, "a.lsh", files_={"a.lsh": 'print(file.read("x"))\n'})
    assert (r.status, r.out) == (0, "capabilities: read\n"), r


def test_check_reports_files_in_unreachable_function(tmp_path):
    code = 'fn never_called()\n  dir.list(".")\nend\nif false\n  file.remove("x")\nend\nprint("hi")\n'
    r = _check(tmp_path, "a.lsh", files_={"a.lsh": code})
    assert (r.status, r.out) == (0, "capabilities: files\n"), r


@pytest.mark.parametrize("call", sorted(GATED_CALLS.values()))
def test_check_reports_files_for_each_builtin(tmp_path, call):
    r = _check(tmp_path, "a.lsh", files_={"a.lsh": f"fn f()\n  {call}\nend\n"})
    reads = call.split("(")[0] in READ_BUILTINS
    assert (r.status, r.out) == (0, "capabilities: read\n" if reads else "capabilities: files\n"), r


def test_check_reports_none_without_gated_calls(tmp_path):
    r = _check(tmp_path, "a.lsh", files_={"a.lsh": 'import path\nprint(path.join("a", "b"))\n'})
    assert (r.status, r.out) == (0, "capabilities: none\n"), r


def test_check_counts_calls_in_included_files(tmp_path):
    r = _check(tmp_path, "a.lsh", files_={"a.lsh": 'include "lib.lsh"\n', "lib.lsh": 'fn f()\n  file.exists("x")\nend\n'})
    assert (r.status, r.out) == (0, "capabilities: read\n"), r


def test_check_touches_nothing(tmp_path):
    (tmp_path / "victim").write_text("v")
    r = _check(tmp_path, "a.lsh", files_={"a.lsh": 'file.remove("victim")\nfile.write("new", "x")\n'})
    assert (r.status, r.out) == (0, "capabilities: files\n"), r
    assert (tmp_path / "victim").read_text() == "v"
    assert not (tmp_path / "new").exists()
