"""Streaming readers: file.open / file.read_line / file.close behind --allow-files.

Budgets (SPEC 8): a line is at most 64 KiB, its ending excluded (kind `file_reads`);
all readers together consume at most 16 MiB per run, line endings included (kind
`file_reads`); at most 32 readers are open at once (kind `readers`). Limits exit 4 and
cannot be caught. Refusal of directories, devices and FIFOs by file.open is tested in
test_files.py with the other safety rules.
"""
import os

import pytest
from conftest import FILES, caught, err_of, files

KIB = 1024
MIB = 1024 * KIB


@pytest.fixture
def work(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    return d


READ_ALL_PLAIN = (
    'h = file.open("d/f")\n'
    'n = 0\n'
    'while file.read_line(h) != nil\n  n += 1\nend\n'
    'file.close(h)\n'
    'print(n)\n'
)


def _read_raw(script, work, data, **kw):
    """Read every line, print each between < and > (no json dependency)."""
    (work / "f").write_bytes(data)
    code = (
        'h = file.open("d/f")\n'
        'while true\n  l = file.read_line(h)\n  if l == nil\n    break\n  end\n  write("<", l, ">\\n")\nend\n'
        'print("END", file.read_line(h), file.read_line(h))\n'
        'file.close(h)\n'
    )
    return files(script, code, **kw)


def test_lines_endings_removed_and_nil_at_end(script, work):
    r = _read_raw(script, work, b"a\nb\r\n\n\r\nlast")
    assert (r.status, r.out) == (0, "<a>\n<b>\n<>\n<>\n<last>\nEND nil nil\n"), r


def test_final_newline_does_not_make_an_extra_line(script, work):
    r = _read_raw(script, work, b"one\ntwo\n")
    assert (r.status, r.out) == (0, "<one>\n<two>\nEND nil nil\n"), r


def test_empty_file_is_nil_at_once(script, work):
    r = _read_raw(script, work, b"")
    assert (r.status, r.out) == (0, "END nil nil\n"), r


def test_cr_not_before_lf_is_kept(script, work):
    r = _read_raw(script, work, b"a\rb\nend\r")
    assert r.status == 0, r
    assert r.out_bytes == b"<a\rb>\n<end\r>\nEND nil nil\n"


def test_bytes_are_kept_as_they_are(script, work):
    r = _read_raw(script, work, b"\x00\xff\xfe\n\xc3\xa4\n")
    assert r.status == 0, r
    assert r.out_bytes == b"<\x00\xff\xfe>\n<\xc3\xa4>\nEND nil nil\n"


def test_many_lines_across_read_chunks(script, work):
    # Lines of varied lengths straddling the reader's internal buffer boundaries.
    lines = [("x" * ((i * 7919) % 65_537)).encode() for i in range(60)]
    data = b"\n".join(lines) + b"\n"
    r = _read_raw(script, work, data)
    assert r.status == 0, r
    expected = b"".join(b"<" + l + b">\n" for l in lines) + b"END nil nil\n"
    assert r.out_bytes == expected


def test_handle_value(script, work):
    (work / "f").write_text("x\n")
    r = files(script, 'h = file.open("d/f")\nprint(type(h))\nprint(str(h))\nfile.close(h)')
    assert r.status == 0, r
    t, s = r.out.splitlines()
    assert t == "handle"
    assert s.startswith("<file") and s.endswith(">")


def test_two_readers_on_one_file_are_independent(script, work):
    (work / "f").write_text("1\n2\n3\n")
    code = (
        'a = file.open("d/f")\nb = file.open("d/f")\n'
        'print(file.read_line(a), file.read_line(a), file.read_line(b), file.read_line(a), file.read_line(b))\n'
        'file.close(a)\nfile.close(b)\n'
    )
    r = files(script, code)
    assert (r.status, r.out) == (0, "1 2 1 3 2\n"), r


def test_open_missing_is_io_error(script):
    kind, msg = err_of(files(script, caught('file.open("d/missing")')))
    assert kind == "io" and os.strerror(2) in msg


def test_close_returns_nil_and_second_close_is_an_error(script, work):
    (work / "f").write_text("x\n")
    r = files(script, 'h = file.open("d/f")\nprint(file.close(h))\n' + caught("file.close(h)"))
    assert r.status == 0, r
    assert r.out.splitlines()[0] == "nil"
    kind, msg = err_of(r)
    assert kind == "value" and "closed" in msg


def test_read_after_close_is_an_error(script, work):
    (work / "f").write_text("x\n")
    r = files(script, 'h = file.open("d/f")\nfile.close(h)\n' + caught("file.read_line(h)"))
    kind, msg = err_of(r)
    assert kind == "value" and "closed" in msg


@pytest.mark.parametrize("call", ['file.read_line("d/f")', "file.close(3)", "file.read_line(nil)"])
def test_non_handles_are_type_errors(script, work, call):
    (work / "f").write_text("x\n")
    assert err_of(files(script, caught(call)))[0] == "type"


def test_open_readers_at_exit_are_fine(script, work):
    (work / "f").write_text("x\n")
    code = 'for i = 1 to 32\n  h = file.open("d/f")\nend\nprint("leaving")\nexit(3)\n'
    r = files(script, code)
    assert (r.status, r.out) == (3, "leaving\n"), r
    assert r.diags == []


# ---------------------------------------------------------------------------
# Line limit: 64 KiB, ending excluded
# ---------------------------------------------------------------------------

LINE = 64 * KIB


@pytest.mark.parametrize(
    "data",
    [
        b"a" * LINE + b"\n" + b"tail\n",
        b"a" * LINE + b"\r\n" + b"tail\n",
        b"tail\n" + b"a" * LINE,  # last line without LF
    ],
    ids=["lf", "crlf", "eof"],
)
def test_line_of_64_kib_passes(script, work, data):
    (work / "f").write_bytes(data)
    code = 'h = file.open("d/f")\nwhile true\n  l = file.read_line(h)\n  if l == nil\n    break\n  end\n  print(len(l))\nend\n'
    r = files(script, code, opts=["--stats"])
    assert r.status == 0, r
    assert sorted(int(x) for x in r.out.split()) == [4, LINE]
    assert r.stats["file_read_bytes"] == len(data)


@pytest.mark.parametrize(
    "data",
    [
        b"ok\n" + b"a" * (LINE + 1) + b"\n",
        b"ok\n" + b"a" * (LINE + 1) + b"\r\n",
        b"ok\n" + b"a" * (LINE + 1),
        b"ok\n" + b"a" * (4 * MIB),  # a long line without LF: refused without reading it all
    ],
    ids=["lf", "crlf", "eof", "huge"],
)
def test_line_of_64_kib_plus_one_is_fatal(script, work, data):
    (work / "f").write_bytes(data)
    code = (
        'h = file.open("d/f")\nprint(file.read_line(h))\n'
        'try\n  l = file.read_line(h)\ncatch e\n  print("caught")\nend\nprint("after")\n'
    )
    r = files(script, code)
    assert r.status == 4, r
    assert r.out == "ok\n"
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("limit", "file_reads", 4)


# ---------------------------------------------------------------------------
# Read budget: 16 MiB per run, shared by all readers, endings included
# ---------------------------------------------------------------------------


def _sixteen_mib(path, extra=b""):
    # 256 lines of 65,535 bytes + LF = exactly 16 MiB
    with open(path, "wb") as f:
        line = b"r" * (LINE - 1) + b"\n"
        for _ in range(256):
            f.write(line)
        f.write(extra)


def test_read_budget_exactly_16_mib_passes(script, work):
    _sixteen_mib(work / "f")
    r = files(script, READ_ALL_PLAIN, opts=["--stats"])
    assert (r.status, r.out) == (0, "256\n"), r
    assert r.stats["file_read_bytes"] == 16 * MIB


def test_read_budget_one_byte_more_is_fatal(script, work):
    _sixteen_mib(work / "f", extra=b"x")
    code = (
        'h = file.open("d/f")\nn = 0\n'
        'try\n  while file.read_line(h) != nil\n    n += 1\n  end\ncatch e\n  print("caught")\nend\n'
        'print(n)\n'
    )
    r = files(script, code, opts=["--stats"])
    assert r.status == 4, r
    assert r.out == ""
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("limit", "file_reads", 4)
    assert r.stats["file_read_bytes"] == 16 * MIB


def test_read_budget_is_shared_by_all_readers(script, work):
    half = b"h" * (LINE - 1) + b"\n"
    for name in ("a", "b"):
        with open(work / name, "wb") as f:
            f.write(half * 128)  # 8 MiB each
    (work / "c").write_bytes(b"c\n")
    code = (
        'a = file.open("d/a")\nb = file.open("d/b")\nn = 0\n'
        'while true\n'
        '  x = file.read_line(a)\n  y = file.read_line(b)\n'
        '  if x == nil and y == nil\n    break\n  end\n  n += 1\nend\n'
        'print(n)\n'
        'c = file.open("d/c")\n'
        'file.read_line(c)\n'
        'print("not reached")\n'
    )
    r = files(script, code, opts=["--stats"])
    assert r.status == 4, r
    assert r.out == "128\n"
    assert (r.diag["kind"], r.diag["line"]) == ("file_reads", 14)
    assert r.stats["file_read_bytes"] == 16 * MIB


def test_read_budget_counts_bytes_consumed_not_file_sizes(script, work):
    # 40 readers opened in turn over a 16 MiB file, one line read from each: 40 lines
    # are consumed, well within the budget, although 640 MiB of file were opened.
    _sixteen_mib(work / "f")
    code = (
        'for i = 1 to 40\n  h = file.open("d/f")\n  file.read_line(h)\n  file.close(h)\nend\nprint("ok")\n'
    )
    r = files(script, code, opts=["--stats"])
    assert (r.status, r.out) == (0, "ok\n"), r
    assert r.stats["file_read_bytes"] == 40 * LINE


def test_stats_count_line_endings(script, work):
    (work / "f").write_bytes(b"ab\r\ncd\n\nxyz")
    r = files(script, READ_ALL_PLAIN, opts=["--stats"])
    assert (r.status, r.out) == (0, "4\n"), r
    assert r.stats["file_read_bytes"] == 11


# ---------------------------------------------------------------------------
# Open readers: 32 at once
# ---------------------------------------------------------------------------


def test_32_open_readers_pass(script, work):
    (work / "f").write_text("line\n")
    code = 'hs = []\nfor i = 1 to 32\n  push(hs, file.open("d/f"))\nend\nprint(len(hs), file.read_line(hs[31]))\n'
    r = files(script, code)
    assert (r.status, r.out) == (0, "32 line\n"), r


def test_33rd_reader_is_fatal(script, work):
    (work / "f").write_text("line\n")
    code = (
        'hs = []\nfor i = 1 to 32\n  push(hs, file.open("d/f"))\nend\nprint("32 open")\n'
        'try\n  push(hs, file.open("d/f"))\ncatch e\n  print("caught")\nend\n'
    )
    r = files(script, code)
    assert r.status == 4, r
    assert r.out == "32 open\n"
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("limit", "readers", 7)


def test_closing_frees_a_slot(script, work):
    (work / "f").write_text("line\n")
    code = (
        'hs = []\nfor i = 1 to 32\n  push(hs, file.open("d/f"))\nend\n'
        'file.close(hs[5])\n'
        'hs[5] = file.open("d/f")\n'
        'print("33 opened, 32 open", file.read_line(hs[5]))\n'
    )
    r = files(script, code)
    assert (r.status, r.out) == (0, "33 opened, 32 open line\n"), r


def test_many_sequential_open_close_cycles(script, work):
    (work / "f").write_text("line\n")
    code = 'for i = 1 to 500\n  h = file.open("d/f")\n  file.close(h)\nend\nprint("ok")\n'
    r = files(script, code)
    assert (r.status, r.out) == (0, "ok\n"), r


def test_reading_to_the_end_does_not_close(script, work):
    # A reader at its end still holds its slot until file.close.
    (work / "f").write_text("x\n")
    code = (
        'hs = []\nfor i = 1 to 32\n  h = file.open("d/f")\n  while file.read_line(h) != nil\n  end\n  push(hs, h)\nend\n'
        'print("32 at end")\nfile.open("d/f")\n'
    )
    r = files(script, code)
    assert r.status == 4 and r.out == "32 at end\n", r
    assert r.diag["kind"] == "readers"


def test_failed_opens_take_no_slot(script, work):
    (work / "f").write_text("line\n")
    (work / "sub").mkdir()
    code = (
        'for i = 1 to 40\n  try\n    file.open("d/missing")\n  catch e\n  end\n'
        '  try\n    file.open("d/sub")\n  catch e\n  end\nend\n'
        'hs = []\nfor i = 1 to 32\n  push(hs, file.open("d/f"))\nend\nprint(len(hs))\n'
    )
    r = files(script, code)
    assert (r.status, r.out) == (0, "32\n"), r
