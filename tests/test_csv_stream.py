"""Streaming CSV readers: csv.open / csv.next / csv.close (issue 4, with the file readers
of issue 3: --allow-files, shared reader slots and streaming-read budget)."""
import json

from conftest import run

MIB = 1024 * 1024


def rows_script(opts=""):
    return (
        f'h = csv.open("data.csv"{opts})\n'
        "while true\n"
        "  r = csv.next(h)\n"
        "  if r == nil\n"
        "    break\n"
        "  end\n"
        "  print(r)\n"
        "end\n"
        "csv.close(h)\n"
    )


def test_rows_as_lists(script, tmp_path):
    (tmp_path / "data.csv").write_bytes(b'a,b\r\n"x, y",2\n\n"multi\nline","q""uote"\n')
    r = script(rows_script(), opts=["--allow-files"])
    assert r.status == 0, r
    assert [json.loads(l) for l in r.out.splitlines()] == [
        ["a", "b"], ["x, y", "2"], ["multi\nline", 'q"uote']]


def test_rows_as_maps_with_header(script, tmp_path):
    (tmp_path / "data.csv").write_bytes(b"name;qty\nada;3\nlinus;\n")
    r = script(rows_script(', {"header": true, "delimiter": ";"}'), opts=["--allow-files"])
    assert r.status == 0, r
    assert [json.loads(l) for l in r.out.splitlines()] == [
        {"name": "ada", "qty": "3"}, {"name": "linus", "qty": ""}]


def test_end_gives_nil_again(script, tmp_path):
    (tmp_path / "data.csv").write_bytes(b"1\n")
    r = script('h = csv.open("data.csv")\nprint(csv.next(h), csv.next(h), csv.next(h))\n', opts=["--allow-files"])
    assert (r.status, r.out) == (0, '["1"] nil nil\n'), r


def test_ragged_row_is_a_parse_error_naming_the_line(script, tmp_path):
    (tmp_path / "data.csv").write_bytes(b"a,b\n1,2\n3\n")
    r = script(rows_script(), opts=["--allow-files"])
    assert (r.status, r.diag["kind"]) == (1, "parse"), r
    assert "line 3 has 1 fields" in r.diag["message"]


def test_unclosed_quote_at_end_is_a_parse_error(script, tmp_path):
    (tmp_path / "data.csv").write_bytes(b'a,"open\nstill open\n')
    r = script(rows_script(), opts=["--allow-files"])
    assert (r.status, r.diag["kind"]) == (1, "parse"), r
    assert "opened on line 1 is never closed" in r.diag["message"]


def test_refused_without_allow_files_touching_nothing(script, tmp_path):
    r = script('try\n  csv.open("missing.csv")\ncatch e\n  print(e.kind, e.message)\nend\n')
    assert (r.status, r.out) == (0, "permission csv.open needs --allow-read or --allow-files\n"), r
    for call in ['csv.next(nil)', 'csv.close(nil)']:
        r = script(call + "\n")
        assert (r.status, r.diag["kind"]) == (1, "permission"), r
        assert "--allow-files" in r.diag["message"]


def test_check_lists_files(tmp_path):
    p = tmp_path / "c.lsh"
    p.write_text('fn never()\n  csv.next(nil)\nend\n')
    r = run(["check", p])
    assert (r.status, r.out) == (0, "capabilities: read\n"), r


def test_io_errors(script, tmp_path):
    (tmp_path / "d").mkdir()
    r = script('try\n  csv.open("nope.csv")\ncatch e\n  print(e.kind)\nend\ntry\n  csv.open("d")\ncatch e\n  print(e.kind)\nend\n',
               opts=["--allow-files"])
    assert (r.status, r.out) == (0, "io\nio\n"), r


def test_closed_reader_and_wrong_kind(script, tmp_path):
    (tmp_path / "data.csv").write_bytes(b"1\n")
    r = script('h = csv.open("data.csv")\ncsv.close(h)\ntry\n  csv.next(h)\ncatch e\n  print(e.kind)\nend\n'
               'f = file.open("data.csv")\ntry\n  csv.next(f)\ncatch e\n  print(e.kind)\nend\n',
               opts=["--allow-files"])
    assert (r.status, r.out) == (0, "value\ntype\n"), r


def test_shares_the_32_reader_slots_with_file_readers(script, tmp_path):
    (tmp_path / "data.csv").write_bytes(b"1\n")
    base = 'hs = []\nfor i = 1 to 16\n  push(hs, file.open("data.csv"))\nend\nfor i = 1 to N\n  push(hs, csv.open("data.csv"))\nend\nprint(len(hs))\n'
    r = script(base.replace("N", "16"), opts=["--allow-files"])
    assert (r.status, r.out) == (0, "32\n"), r
    r = script(base.replace("N", "17"), opts=["--allow-files"])
    assert (r.status, r.diag["error"], r.diag["kind"]) == (4, "limit", "readers"), r
    # Closing frees a slot.
    r = script(base.replace("N", "16") + 'csv.close(hs[31])\nh = csv.open("data.csv")\nprint("ok")\n',
               opts=["--allow-files"])
    assert (r.status, r.out) == (0, "32\nok\n"), r


def test_line_limit_64k(script, tmp_path):
    (tmp_path / "data.csv").write_bytes(b"x" * 65536 + b"\n")
    r = script('h = csv.open("data.csv")\nprint(len(csv.next(h)[0]))\n', opts=["--allow-files"])
    assert (r.status, r.out) == (0, "65536\n"), r
    (tmp_path / "data.csv").write_bytes(b"x" * 65537 + b"\n")
    r = script('h = csv.open("data.csv")\nprint(len(csv.next(h)[0]))\n', opts=["--allow-files"])
    assert (r.status, r.diag["kind"]) == (4, "file_reads"), r


def test_shares_the_streaming_read_budget(script, tmp_path):
    # 16 MiB of lines through a file reader and a CSV reader together: exactly the budget
    # passes, one byte more stops the run.
    line = b"y" * 1023 + b"\n"  # 1 KiB per line
    (tmp_path / "a.txt").write_bytes(line * (8 * 1024))   # 8 MiB
    (tmp_path / "data.csv").write_bytes(line * (8 * 1024))  # 8 MiB
    code = ('f = file.open("a.txt")\nwhile file.read_line(f) != nil\nend\n'
            'h = csv.open("data.csv")\nn = 0\nwhile csv.next(h) != nil\n  n += 1\nend\nprint(n)\n')
    r = script(code, opts=["--allow-files", "--stats", "--max-steps", "100000"])
    assert (r.status, r.out) == (0, "8192\n"), r
    assert r.stats["file_read_bytes"] == 16 * MIB
    (tmp_path / "data.csv").write_bytes(line * (8 * 1024) + b"z")
    r = script(code, opts=["--allow-files", "--max-steps", "100000"])
    assert (r.status, r.diag["kind"]) == (4, "file_reads"), r


def test_a_record_is_charged_by_its_bytes_and_fields(script, tmp_path):
    """csv.next charges 400, 1 a byte of the record's text and 20 a field (UTILITIES.md).
    Two records of ten fields, one of 1-byte and one of 30-byte fields: the runs differ
    by the bytes alone; a record of eleven fields by one field's 20 and its bytes. (Until
    2026-12-07 the bytes were not charged: 30-byte fields ran at 2.18 ns a unit.)"""
    def work_of(fields):
        line = ",".join(fields) + "\n"
        (tmp_path / "data.csv").write_text(line)
        r = script('h = csv.open("data.csv")\nr = csv.next(h)\n', opts=["--allow-files", "--stats"])
        assert r.status == 0, r
        return r.stats["work"], len(line) - 1

    short, short_len = work_of(["a"] * 10)
    long, long_len = work_of(["b" * 30] * 10)
    wider, wider_len = work_of(["a"] * 11)
    assert long - short == long_len - short_len == 290
    assert wider - short == 20 + (wider_len - short_len) == 22
