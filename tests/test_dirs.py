"""dir.* builtins behind --allow-files: dir.list (sorted, bounded), dir.create, dir.remove.

Budgets (SPEC 8, kind `dir`, exit 4): a listing of 16,384 entries passes and 16,385
fails; 1 MiB of names passes and one byte more fails. Permission refusals for dir.* are
in test_files.py (one table for every gated builtin).
"""
import errno
import os

import pytest
from conftest import FILES, caught, err_of, files


@pytest.fixture
def work(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    return d


def touch_many(d, names):
    for n in names:
        fd = os.open(os.path.join(d, n), os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd)


# ---------------------------------------------------------------------------
# dir.list
# ---------------------------------------------------------------------------


def test_list_is_sorted_bytewise(script, work):
    names = ["b", "a", "B", "a.txt", "_x", "10", "9", "\u00e4", "Z"]
    touch_many(work, names)
    r = files(script, 'for n in dir.list("d")\n  print(n)\nend')
    assert r.status == 0, r
    assert r.out_bytes.split(b"\n")[:-1] == sorted(n.encode() for n in names)


def test_list_returns_names_only_without_dot_entries(script, work):
    (work / "f").write_text("x")
    (work / "sub").mkdir()
    (work / "sub" / "inner").write_text("y")
    os.symlink("f", work / "link")
    os.symlink("nowhere", work / "dangling")
    os.mkfifo(work / "fifo")
    r = files(script, 'print(dir.list("d"))')
    assert (r.status, r.out) == (0, '["dangling","f","fifo","link","sub"]\n'), r


def test_list_empty_directory(script, work):
    r = files(script, 'l = dir.list("d")\nprint(type(l), len(l))')
    assert (r.status, r.out) == (0, "list 0\n"), r


def test_list_working_directory(script, work):
    # the script runs in tmp_path, which holds t.lsh and d/
    r = files(script, 'print(dir.list("."))')
    assert (r.status, r.out) == (0, '["d","t.lsh"]\n'), r


def test_list_missing_is_io_error(script):
    kind, msg = err_of(files(script, caught('dir.list("d/missing")')))
    assert kind == "io" and os.strerror(errno.ENOENT) in msg


def test_list_of_a_file_is_io_error(script, work):
    (work / "f").write_text("x")
    kind, msg = err_of(files(script, caught('dir.list("d/f")')))
    assert kind == "io" and os.strerror(errno.ENOTDIR) in msg


def test_list_of_a_fifo_is_io_error_never_a_hang(script, work):
    os.mkfifo(work / "fifo")
    kind, _ = err_of(files(script, caught('dir.list("d/fifo")')))
    assert kind == "io"


def test_list_names_with_invalid_utf8_are_kept_as_bytes(script, work):
    name = b"caf\xe9"
    fd = os.open(os.path.join(os.fsencode(work), name), os.O_CREAT | os.O_WRONLY)
    os.close(fd)
    r = files(script, 'l = dir.list("d")\nprint(len(l), len(l[0]))\nwrite(l[0])')
    assert r.status == 0, r
    assert r.out_bytes == b"1 4\n" + name


# ---------------------------------------------------------------------------
# dir.list budget: 16,384 entries, 1 MiB of names
# ---------------------------------------------------------------------------

MAX_ENTRIES = 16_384
MAX_NAME_BYTES = 1024 * 1024


def test_list_of_16384_entries_passes(script, work):
    touch_many(work, (f"f{i:05d}" for i in range(MAX_ENTRIES)))
    r = files(script, 'l = dir.list("d")\nprint(len(l), l[0], l[-1])')
    assert (r.status, r.out) == (0, "16384 f00000 f16383\n"), r


def test_list_of_16385_entries_is_fatal_dir_limit(script, work):
    touch_many(work, (f"f{i:05d}" for i in range(MAX_ENTRIES + 1)))
    r = files(script, 'try\n  l = dir.list("d")\n  print(len(l))\ncatch e\n  print("caught")\nend\nprint("after")')
    assert r.status == 4, r
    assert r.out == ""
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("limit", "dir", 2)


def _names_of_total(total):
    """File names (each at most 255 bytes) whose lengths add up to `total`."""
    names = []
    i = 0
    left = total
    while left > 0:
        n = min(255, left)
        if 0 < left - n < 6:  # keep every name long enough to be unique
            n = left - 6
        prefix = f"{i:05d}"
        names.append(prefix + "n" * (n - len(prefix)))
        left -= n
        i += 1
    assert sum(len(n) for n in names) == total and len(set(names)) == len(names)
    return names


def test_list_of_exactly_1_mib_of_names_passes(script, work):
    names = _names_of_total(MAX_NAME_BYTES)
    touch_many(work, names)
    # (a while loop: a `for` snapshot would account the 1.3 MB list a second time)
    r = files(script, 'l = dir.list("d")\nt = 0\ni = 0\nwhile i < len(l)\n  t += len(l[i])\n  i += 1\nend\nprint(len(l), t)')
    assert (r.status, r.out) == (0, f"{len(names)} {MAX_NAME_BYTES}\n"), r


def test_list_of_1_mib_of_names_plus_one_byte_is_fatal(script, work):
    names = _names_of_total(MAX_NAME_BYTES)
    touch_many(work, names + ["x"])
    r = files(script, 'try\n  l = dir.list("d")\ncatch e\n  print("caught")\nend')
    assert r.status == 4, r
    assert "caught" not in r.out
    assert (r.diag["error"], r.diag["kind"]) == ("limit", "dir")


# ---------------------------------------------------------------------------
# dir.create / dir.remove
# ---------------------------------------------------------------------------


def test_create_then_list_then_remove(script, work):
    code = (
        'print(dir.create("d/new"))\n'
        'print(file.exists("d/new"), file.stat("d/new").is_dir, dir.list("d/new"))\n'
        'print(dir.remove("d/new"))\n'
        'print(file.exists("d/new"))\n'
    )
    r = files(script, code)
    assert (r.status, r.out) == (0, "nil\ntrue true []\nnil\nfalse\n"), r
    assert not (work / "new").exists()


def test_create_leaves_a_real_directory(script, work):
    r = files(script, 'dir.create("d/new")\nfile.write("d/new/f", "x")')
    assert r.status == 0, r
    assert (work / "new").is_dir() and (work / "new" / "f").read_text() == "x"


def test_create_existing_is_io_error(script, work):
    (work / "sub").mkdir()
    (work / "f").write_text("x")
    for target in ("d/sub", "d/f"):
        kind, msg = err_of(files(script, caught(f'dir.create("{target}")')))
        assert kind == "io" and os.strerror(errno.EEXIST) in msg
    assert (work / "f").read_text() == "x"


def test_create_is_not_recursive(script, work):
    kind, msg = err_of(files(script, caught('dir.create("d/a/b")')))
    assert kind == "io" and os.strerror(errno.ENOENT) in msg
    assert not (work / "a").exists()


def test_remove_non_empty_is_io_error(script, work):
    (work / "sub").mkdir()
    (work / "sub" / "keep").write_text("k")
    kind, msg = err_of(files(script, caught('dir.remove("d/sub")')))
    assert kind == "io" and os.strerror(errno.ENOTEMPTY) in msg
    assert (work / "sub" / "keep").read_text() == "k"


def test_remove_missing_is_io_error(script):
    kind, msg = err_of(files(script, caught('dir.remove("d/missing")')))
    assert kind == "io" and os.strerror(errno.ENOENT) in msg


def test_remove_a_file_is_io_error(script, work):
    (work / "f").write_text("x")
    kind, msg = err_of(files(script, caught('dir.remove("d/f")')))
    assert kind == "io" and os.strerror(errno.ENOTDIR) in msg
    assert (work / "f").read_text() == "x"


def test_remove_symlink_to_directory_is_io_error(script, work):
    (work / "real").mkdir()
    os.symlink("real", work / "link")
    kind, _ = err_of(files(script, caught('dir.remove("d/link")')))
    assert kind == "io"
    assert (work / "real").is_dir() and os.path.islink(work / "link")


def test_uncaught_dir_error_exits_1(script):
    r = files(script, 'dir.remove("d/missing")\nprint("after")')
    assert r.status == 1 and r.out == "", r
    assert (r.diag["error"], r.diag["kind"], r.diag["line"]) == ("runtime", "io", 1)
