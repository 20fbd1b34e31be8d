"""csv.parse / csv.stringify: RFC 4180 quoting, line ends, header maps, options, bounds."""
import csv
import io
import json

import pytest


def lit(s):
    """A Leash string literal for `s` (JSON escapes are Leash escapes; `$` is escaped)."""
    return json.dumps(s, ensure_ascii=False).replace("$", "\\$")


RFC4180 = [
    ("a,b,c\n1,2,3\n", [["a", "b", "c"], ["1", "2", "3"]]),
    ("a,b,c\r\n1,2,3\r\n", [["a", "b", "c"], ["1", "2", "3"]]),
    ("a,b,c\r\n1,2,3", [["a", "b", "c"], ["1", "2", "3"]]),
    ("a,b\r1,2\r", [["a", "b"], ["1", "2"]]),
    ('"a","b"\n', [["a", "b"]]),
    ('"a,b",c\n', [["a,b", "c"]]),
    ('"line\nbreak",x\r\n', [["line\nbreak", "x"]]),
    ('"crlf\r\ninside",x\r\n', [["crlf\r\ninside", "x"]]),
    ('"say ""hi""",x\n', [['say "hi"', "x"]]),
    ('"""",x\n', [['"', "x"]]),
    (",,\n", [["", "", ""]]),
    ('"",x,\n', [["", "x", ""]]),
    ("a, b ,c\n", [["a", " b ", "c"]]),
    ("é,ü\n", [["é", "ü"]]),
    ("", []),
    ("\n\n", []),
    ("a,b\n\n1,2\n", [["a", "b"], ["1", "2"]]),
]


@pytest.mark.parametrize("text,rows", RFC4180)
def test_agrees_with_python_csv(text, rows):
    # The expectations above are what Python's reader makes of the same text (blank
    # lines aside, which Python reads as empty rows and Leash skips).
    py = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    assert py == rows


def test_stringify_is_read_by_python(script):
    rows = [["a", "b,c", 'q"q', "multi\nline", ""], ["1", "é", ",", '"', "x"]]
    r = script(f"write(csv.stringify(json.parse({lit(json.dumps(rows))})))")
    assert list(csv.reader(io.StringIO(r.out, newline=""))) == rows


# ---------------------------------------------------------------------------
# Bounds at N and N+1
# ---------------------------------------------------------------------------


def test_string_bound(script):
    # A field is at most the input, itself at most 1 MiB.
    r = script('print(len(csv.parse(repeat("a", 1048576))[0][0]))')
    assert (r.status, r.out) == (0, "1048576\n"), r
    # Writing: 1 MiB of output at most (a field of N bytes is N + 1 with its line end).
    r = script('print(len(csv.stringify([[repeat("a", 1048575)]])))')
    assert (r.status, r.out) == (0, "1048576\n"), r
    r = script('csv.stringify([[repeat("a", 1048576)]])')
    assert (r.status, r.diag["kind"]) == (4, "string"), r


def test_shared_fields_of_a_large_file_are_copied_on_write(script, tmp_path):
    # Past 64 KiB of text, equal short fields share one string (csv.parse); changing
    # one row's field changes only that row, with and without a header.
    body = "".join(f"{i},open,\"a, b\"\n" for i in range(8000))
    (tmp_path / "d.csv").write_text(body)
    (tmp_path / "h.csv").write_text("id,state,pair\n" + body)
    code = """
rows = csv.parse(file.read("d.csv"))
rows[5][1] = rows[5][1] .. "!"
rows[6][2] = "x"
print(rows[4][1], rows[5][1], rows[6][1], rows[6][2], rows[7][2], len(rows))
recs = csv.parse(file.read("h.csv"), {header: true})
recs[3].state = upper(recs[3].state)
print(recs[2].state, recs[3].state, recs[4].state, len(recs))
n = 0
for r in rows
  if r[1] == "open" and r[2] == "a, b"
    n += 1
  end
end
print(n)
"""
    r = script(code, opts=["--allow-read", "--limit", "all=max", "--max-steps", "10000000"])
    assert r.status == 0, r
    assert r.out == "open open! open x a, b 8000\nopen OPEN open 8000\n7998\n", r
