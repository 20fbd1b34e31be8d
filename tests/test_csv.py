"""csv.parse / csv.stringify: RFC 4180 quoting, line ends, header maps, options, bounds."""
import csv
import io
import json

import pytest


def lit(s):
    """A Leash string literal for `s` (JSON escapes are Leash escapes; `$` is escaped)."""
    return json.dumps(s, ensure_ascii=False).replace("$", "\\$")


def parsed(script, text, opts=None):
    call = f"csv.parse({lit(text)}" + (f", {opts})" if opts else ")")
    r = script(f"print(json.stringify({call}))")
    assert r.status == 0, r
    return json.loads(r.out)


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
def test_rfc4180(script, text, rows):
    assert parsed(script, text) == rows


@pytest.mark.parametrize("text,rows", RFC4180)
def test_agrees_with_python_csv(text, rows):
    # The expectations above are what Python's reader makes of the same text (blank
    # lines aside, which Python reads as empty rows and Leash skips).
    py = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    assert py == rows


def test_header_maps(script):
    r = script(
        r"""
rows = csv.parse("name,age\r\nAda,36\r\n\"Lovelace, A\",\"\"\r\n", {header: true})
print(len(rows), keys(rows[0]))
print(rows[0].name, rows[0].age, rows[1].name, "[" .. rows[1].age .. "]")
print(csv.parse("a,b\n", {header: true}))
print(csv.parse("", {header: true}))
print(csv.parse("a,b\n1,2\n", {header: false}))
"""
    )
    assert r.status == 0, r
    assert r.out.splitlines() == [
        '2 ["name","age"]',
        "Ada 36 Lovelace, A []",
        "[]",
        "[]",
        '[["a","b"],["1","2"]]',
    ]


def test_options(script):
    assert parsed(script, "a;b\n'x;y';'it''s'\n", '{delimiter: ";", quote: "\'"}') == [
        ["a", "b"],
        ["x;y", "it's"],
    ]
    assert parsed(script, "a\tb\n1\t2\n", '{delimiter: "\\t", header: true}') == [{"a": "1", "b": "2"}]


@pytest.mark.parametrize(
    "opts,kind",
    [
        ('{delimiter: ",,"}', "value"),
        ('{delimiter: ""}', "value"),
        ('{delimiter: "\\n"}', "value"),
        ('{quote: ","}', "value"),
        ('{header: "yes"}', "type"),
        ('{delimiter: 1}', "type"),
        ('{headers: true}', "value"),
        ('{line_end: "\\n"}', "value"),
        ("[1]", "type"),
    ],
)
def test_bad_options(script, opts, kind):
    r = script(f'csv.parse("a,b\\n", {opts})')
    assert (r.status, r.diag["kind"]) == (1, kind), r


def test_ragged_rows_are_reported(script):
    r = script('csv.parse("a,b,c\\n1,2,3\\n4,5\\n")')
    assert (r.status, r.diag["kind"]) == (1, "parse"), r
    assert "line 3 has 2 fields, but the first row has 3" in r.diag["message"]
    r = script('csv.parse("a,b\\n1,2,3\\n", {header: true})')
    assert (r.status, r.diag["kind"]) == (1, "parse"), r
    assert "line 2 has 3 fields, but the header has 2" in r.diag["message"]
    # A quoted field spanning lines does not throw the line numbers off.
    r = script('csv.parse("a,b\\n\\"x\\ny\\",1\\n2\\n")')
    assert "line 4 has 1 fields" in r.diag["message"], r


def test_unclosed_quote_and_duplicate_header(script):
    r = script('csv.parse("a,b\\n\\"open,1\\n2,3\\n")')
    assert (r.status, r.diag["kind"]) == (1, "parse"), r
    assert "opened on line 2 is never closed" in r.diag["message"]
    r = script('csv.parse("a,a\\n1,2\\n", {header: true})')
    assert (r.status, r.diag["kind"]) == (1, "parse"), r
    r = script('try\n  csv.parse("a,b\\n1\\n")\ncatch e\n  print(e.kind)\nend')
    assert r.out == "parse\n"


def test_bytes_are_kept(script):
    r = script('rows = csv.parse("\\xff,b\\n")\nprint(len(rows[0][0]), rows[0][0] == "\\xff")')
    assert (r.status, r.out) == (0, "1 true\n"), r


def test_stringify(script):
    r = script(
        r"""
write(csv.stringify([["a", "b,c", "d\"e"], [1, 2.5, nil], [true, "", "x\ny"]]))
write(csv.stringify([{name: "Ada", n: 1}, {n: 2, name: "Bo"}]))
write(csv.stringify([{name: "Ada", n: 1}], {header: false}))
write(csv.stringify([["a", "b"]], {delimiter: ";", quote: "'", line_end: "\r\n"}))
write(csv.stringify([["x;y", "it's"]], {delimiter: ";", quote: "'"}))
write(csv.stringify([[""]]))
print(len(csv.stringify([])))
"""
    )
    assert r.status == 0, r
    assert r.out_bytes == (
        b'a,"b,c","d""e"\n1,2.5,\ntrue,,"x\ny"\n'
        b"name,n\nAda,1\nBo,2\n"
        b"Ada,1\n"
        b"a;b\r\n"
        b"'x;y';'it''s'\n"
        b'""\n'
        b"0\n"
    )


def test_stringify_round_trips(script):
    rows = [["a", "b,c", 'q"q', "multi\r\nline", "", " sp "], ["1", "é", ",", '"', "\n", "x"]]
    r = script(f"rows = json.parse({lit(json.dumps(rows))})\nassert_eq(csv.parse(csv.stringify(rows)), rows)\nprint(1)")
    assert (r.status, r.out) == (0, "1\n"), r
    r = script(
        'rows = [{a: "1", b: "x,y"}, {a: "2", b: ""}]\n'
        "assert_eq(csv.parse(csv.stringify(rows), {header: true}), rows)\nprint(1)"
    )
    assert (r.status, r.out) == (0, "1\n"), r


def test_stringify_is_read_by_python(script):
    rows = [["a", "b,c", 'q"q', "multi\nline", ""], ["1", "é", ",", '"', "x"]]
    r = script(f"write(csv.stringify(json.parse({lit(json.dumps(rows))})))")
    assert list(csv.reader(io.StringIO(r.out, newline=""))) == rows


@pytest.mark.parametrize(
    "rows,kind",
    [
        ("[[1, 2], [3]]", "value"),
        ("[[1, [2]]]", "type"),
        ("[[{a: 1}]]", "type"),
        ("[[1], {a: 1}]", "type"),
        ("[{a: 1}, [1]]", "type"),
        ("[{a: 1}, {b: 1}]", "value"),
        ("[{a: 1}, {a: 1, b: 2}]", "value"),
        ("[[]]", "value"),
        ("[1]", "type"),
        ('"a,b"', "type"),
    ],
)
def test_stringify_refuses(script, rows, kind):
    r = script(f"csv.stringify({rows})")
    assert (r.status, r.diag["kind"]) == (1, kind), r


# ---------------------------------------------------------------------------
# Bounds at N and N+1
# ---------------------------------------------------------------------------


def test_row_bound(script):
    r = script('print(len(csv.parse(repeat("x\\n", 16384))))')
    assert (r.status, r.out) == (0, "16384\n"), r
    r = script('csv.parse(repeat("x\\n", 16385))')
    assert (r.status, r.diag["kind"]) == (4, "list"), r
    # Maps take more storage per row than lists: with a header, the frame-storage limit
    # comes first, still while reading.
    r = script('csv.parse("h\\n" .. repeat("x\\n", 16384), {header: true})')
    assert (r.status, r.diag["kind"]) == (4, "frame_storage"), r


def test_field_bound(script):
    r = script('print(len(csv.parse(repeat(",", 16383))[0]))')
    assert (r.status, r.out) == (0, "16384\n"), r
    r = script('csv.parse(repeat(",", 16384))')
    assert (r.status, r.diag["kind"]) == (4, "list"), r


def test_string_bound(script):
    # A field is at most the input, itself at most 1 MiB.
    r = script('print(len(csv.parse(repeat("a", 1048576))[0][0]))')
    assert (r.status, r.out) == (0, "1048576\n"), r
    # Writing: 1 MiB of output at most (a field of N bytes is N + 1 with its line end).
    r = script('print(len(csv.stringify([[repeat("a", 1048575)]])))')
    assert (r.status, r.out) == (0, "1048576\n"), r
    r = script('csv.stringify([[repeat("a", 1048576)]])')
    assert (r.status, r.diag["kind"]) == (4, "string"), r


def test_storage_is_bounded_while_reading(script):
    # 300,000 empty fields in rows of 30: far beyond a frame's storage once built, so the
    # reader stops with the frame-storage limit instead of building it first.
    r = script('csv.parse(repeat(repeat(",", 29) .. "\\n", 10000))', opts=["--stats"])
    assert (r.status, r.diag["kind"]) == (4, "frame_storage"), r


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
