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
