"""Issue 25: whole JSON documents without their text. `json.read(source)` parses the one
document of a file reader or stdin in chunks, `json.write(path, v[, indent])` and
`json.print(v[, indent])` write a value's text in chunks: the same values, errors, limits
and charges as `json.parse(file.read(p))`, `file.write(p, json.stringify(v))` and
`print(json.stringify(v))`, never holding the whole text."""
import json
import os

import pytest

from conftest import ROOT, run, run_capped

MIB = 1024 * 1024
CORPUS = ROOT / "tests" / "corpora" / "JSONTestSuite" / "test_parsing"  # vendored, MIT
BIG = ["--limit", "all=max", "--max-steps", "100000000", "--max-work", "1000000000000"]

PARSE = "v = json.parse(file.read(args()[0]))\nprint(json.stringify(v))\nprint(json.stringify(v, 2))\n"
READ = "v = json.read(file.open(args()[0]))\nprint(json.stringify(v))\nprint(json.stringify(v, 2))\n"
READ_STDIN = 'v = json.read("-")\nprint(json.stringify(v))\nprint(json.stringify(v, 2))\n'
# json.read, then json.write and json.print of what it read, each checked against stringify
ROUND = """v = json.read(file.open(args()[0]))
json.write(args()[1], v)
assert(file.read(args()[1]) == json.stringify(v))
json.write(args()[1], v, 2)
assert(file.read(args()[1]) == json.stringify(v, 2))
json.print(v)
json.print(v, "\\t")
"""


def leash(args, input=b"", cap=1024 * MIB, cwd=None, timeout=300):
    return run_capped(args, input, cap, cwd, timeout)


def seen(r, name):
    """What a run shows: status, stdout, and its diagnostic with the builtin's name made
    neutral (the source line and column of the call differ between the scripts)."""
    d = r.diags
    diag = None
    if d:
        diag = {k: d[0].get(k) for k in ("error", "kind", "limit", "value", "option")}
        diag["message"] = d[0].get("message", "").replace(name, "JSON")
    return r.status, r.out, diag


def script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def corpus(prefix):
    if not CORPUS.is_dir():
        return []
    return sorted(p.name for p in CORPUS.iterdir() if p.name.startswith(prefix))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="JSONTestSuite corpus not beside the repository")
@pytest.mark.parametrize("name", corpus(""))
def test_json_read_of_a_file_is_json_parse_of_its_text(tmp_path, name):
    doc = CORPUS / name
    parse = script(tmp_path, "p.lsh", PARSE)
    read = script(tmp_path, "r.lsh", READ)
    a = leash(["--allow-read", parse, doc])
    b = leash(["--allow-read", read, doc])
    assert seen(a, "json.parse") == seen(b, "json.read"), (a, b)
    # the same from stdin
    c = leash([script(tmp_path, "s.lsh", READ_STDIN)], input=doc.read_bytes())
    assert seen(c, "json.read") == seen(b, "json.read"), (b, c)
    if a.status == 0:
        # and written back by json.write / json.print as json.stringify writes it
        out = tmp_path / "out.json"
        w = leash(["--allow-files", script(tmp_path, "w.lsh", ROUND), doc, out])
        assert w.status == 0, w
        lines = a.out.split("\n")
        assert w.out.startswith(lines[0] + "\n"), (a.out, w.out)


def test_the_corpus_is_here():
    if not CORPUS.is_dir():
        pytest.skip("JSONTestSuite corpus not beside the repository")
    assert len(corpus("")) > 300


def big_doc(n):
    rows = [{"id": i, "name": f"user{i % 97}", "tags": ["a", "bb"], "s": "x\ty" * (i % 5), "f": i + 0.5}
            for i in range(n)]
    return json.dumps(rows, indent=1).encode()


@pytest.mark.parametrize("where", ["early", "late"])
def test_a_syntax_error_names_the_line_and_column_of_the_whole_text(tmp_path, where):
    doc = big_doc(20000)
    assert len(doc) > 4 * 65536
    lines = doc.split(b"\n")
    k = 40 if where == "early" else len(lines) - 30
    lines[k] = lines[k] + b" ,,"
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\n".join(lines))
    a = leash([*BIG, "--allow-read", script(tmp_path, "p.lsh", PARSE), bad])
    b = leash([*BIG, "--allow-read", script(tmp_path, "r.lsh", READ), bad])
    assert a.status == 1 and a.diag["kind"] == "parse", a
    assert f"at line {k + 1}, column" in a.diag["message"], a
    assert seen(a, "json.parse") == seen(b, "json.read")
    c = leash([*BIG, script(tmp_path, "s.lsh", READ_STDIN)], input=bad.read_bytes())
    assert seen(c, "json.read") == seen(b, "json.read")


def test_invalid_utf8_or_a_text_too_long_win_over_an_earlier_syntax_error(tmp_path):
    # json.parse checks the whole text first: json.read reads the rest to find out.
    for doc, lim in [(b"[1,,2, \"" + b"x" * 100000 + b"\xff\"]", []),
                     (b"[1,,2, \"" + b"x" * 100000 + b"\"]", ["--limit", "json=100000"]),
                     (b"[[[[[[" + b" " * 200000 + b"\xe2\x82", ["--limit", "json_depth=3"])]:
        f = tmp_path / "d.json"
        f.write_bytes(doc)
        a = leash([*lim, "--allow-read", "--limit", "string=1M", script(tmp_path, "p.lsh", PARSE), f])
        b = leash([*lim, "--allow-read", script(tmp_path, "r.lsh", READ), f])
        assert a.status in (1, 4) and seen(a, "json.parse") == seen(b, "json.read"), (a, b)


def test_json_read_limits_at_n_and_n_plus_1(tmp_path):
    doc = b'{"a": [1, 2, 3], "b": "' + b"x" * 1000 + b'"}'
    f = tmp_path / "d.json"
    f.write_bytes(doc)
    r = script(tmp_path, "r.lsh", "v = json.read(file.open(args()[0]))\nprint(len(v))\n")
    n = len(doc)
    # the json limit: the text's bytes
    assert leash(["--allow-read", "--limit", f"json={n}", r, f]).status == 0
    x = leash(["--allow-read", "--limit", f"json={n - 1}", r, f])
    assert x.status == 4 and x.diag["kind"] == "json" and f"more than {n - 1} bytes" in x.diag["message"], x
    # the reader's budget: every byte of the file
    assert leash(["--allow-read", "--limit", f"file_reads={n}", r, f]).status == 0
    x = leash(["--allow-read", "--limit", f"file_reads={n - 1}", r, f])
    assert x.status == 4 and x.diag["kind"] == "file_reads", x
    # stdin's budget
    s = script(tmp_path, "s.lsh", 'v = json.read("-")\nprint(len(v))\n')
    assert leash(["--limit", f"stdin={n}", s], input=doc).status == 0
    x = leash(["--limit", f"stdin={n - 1}", s], input=doc)
    assert x.status == 4 and x.diag["kind"] == "stdin", x
    # depth and nodes, as json.parse counts them
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 10 + b"]" * 10)
    assert leash(["--allow-read", "--limit", "json_depth=10", r, deep]).status == 0
    x = leash(["--allow-read", "--limit", "json_depth=9", r, deep])
    assert x.status == 4 and x.diag["kind"] == "json" and "nested more than 9" in x.diag["message"], x
    nodes = tmp_path / "nodes.json"
    nodes.write_bytes(b"[1, 2, 3, 4]")
    assert leash(["--allow-read", "--limit", "json_nodes=5", r, nodes]).status == 0
    x = leash(["--allow-read", "--limit", "json_nodes=4", r, nodes])
    assert x.status == 4 and "more than 4 values" in x.diag["message"], x
    # the frame limit on the value, as json.parse
    a = leash(["--allow-read", "--limit", "frame_storage=1000", "--limit", "string=1M",
               script(tmp_path, "p.lsh", PARSE), f])
    b = leash(["--allow-read", "--limit", "frame_storage=1000", r, f])
    assert a.status == 4 and seen(a, "json.parse") == seen(b, "json.read"), (a, b)


def test_json_read_sources(tmp_path):
    r = leash(["-e", 'json.read("x.json")'])
    assert r.status == 1 and r.diag["kind"] == "value" and '"-" (stdin) or a file reader' in r.diag["message"], r
    r = leash(["-e", "json.read(1)"])
    assert r.status == 1 and r.diag["kind"] == "type", r
    f = tmp_path / "d.json"
    f.write_text("[1]\n")
    code = "r = file.open(args()[0])\nfile.close(r)\njson.read(r)\n"
    r = leash(["--allow-read", script(tmp_path, "c.lsh", code), f])
    assert r.status == 1 and r.diag["kind"] == "value", r
    # what a reader has buffered is read first; after the document the reader is at its end
    f.write_text("# a comment line\n{\"a\":\n 1}\n")
    code = "r = file.open(args()[0])\nprint(file.read_line(r))\nprint(json.read(r))\nprint(file.read_line(r))\n"
    r = leash(["--allow-read", script(tmp_path, "b.lsh", code), f])
    assert r.status == 0 and r.out == '# a comment line\n{"a":1}\nnil\n', r
    # stdin: an empty input is a parse error, as json.parse("")
    r = leash([script(tmp_path, "s.lsh", READ_STDIN)], input=b"")
    assert r.status == 1 and r.diag["message"] == "json.read: unexpected end of input where a value was expected at line 1, column 1", r


def test_json_write_is_file_write_of_the_text(tmp_path):
    v = '{a: [1, 2.5, "é"], b: {c: nil, d: true}, e: "' + "x" * 100 + '"}'
    text = leash(["-e", f"write(json.stringify({v}))"]).out.encode()
    n = len(text)
    code = f"json.write(args()[0], {v})\n"
    w = script(tmp_path, "w.lsh", code)
    out = tmp_path / "o.json"
    # the run's budget at N and N - 1 (nothing written then: the file keeps what it had)
    r = leash(["--allow-files", "--limit", f"file_writes={n}", "--stats", w, out])
    assert r.status == 0 and out.read_bytes() == text, r
    assert r.stats["file_write_bytes"] == n if "file_write_bytes" in r.stats else True
    out.write_bytes(b"old")
    r = leash(["--allow-files", "--limit", f"file_writes={n - 1}", w, out])
    assert r.status == 4 and r.diag["kind"] == "file_writes", r
    assert out.read_bytes() == b"old"
    # the one value's bound at N and N - 1
    r = leash(["--allow-files", "--limit", f"file_writes_value={n}", w, out])
    assert r.status == 0 and out.read_bytes() == text, r
    out.write_bytes(b"old")
    r = leash(["--allow-files", "--limit", f"file_writes_value={n - 1}", w, out])
    assert r.status == 4 and r.diag["kind"] == "file_writes" and f"more than {n - 1} bytes" in r.diag["message"], r
    assert out.read_bytes() == b"old"
    # exactly what file.write(p, json.stringify(v)) says, limits and errors alike
    for lim in ([], ["--limit", f"file_writes={n - 1}"], ["--limit", f"file_writes_value={n - 1}"], ["--limit", "json=50"]):
        a = leash(["--allow-files", *lim, "-e", f"file.write(\"o.json\", json.stringify({v}))"], cwd=tmp_path)
        b = leash(["--allow-files", *lim, "-e", f"json.write(\"o.json\", {v})"], cwd=tmp_path)
        sa, sb = seen(a, "file.write"), seen(b, "json.write")
        if sa[2] and sa[2]["message"].startswith("json.stringify"):
            sa[2]["message"] = sa[2]["message"].replace("json.stringify", "JSON")
        assert sa == sb, (a, b)
    # a value JSON cannot hold: nothing is written, the file is not even opened
    out.write_bytes(b"old")
    r = leash(["--allow-files", "-e", 'json.write(args()[0], [1, file.open(args()[0])])', out])
    assert r.status == 1 and r.diag["kind"] == "value", r
    assert out.read_bytes() == b"old"
    # the capability
    r = leash(["--allow-read", w, out])
    assert r.status == 1 and r.diag["kind"] == "permission", r


def test_json_print_is_print_of_the_text():
    v = '{a: [1, 2, 3], b: "xyz"}'
    text = '{"a":[1,2,3],"b":"xyz"}'
    n = len(text)
    code = f"json.print({v})\n"
    assert leash(["-e", code]).out == text + "\n"
    assert leash(["-e", f"json.print({v}, 1)"]).out == leash(["-e", f"print(json.stringify({v}, 1))"]).out
    # one print's bound (the newline excluded) at N and N - 1: nothing written then
    r = leash(["--limit", f"stdout_print={n}", "-e", code])
    assert r.status == 0 and r.out == text + "\n", r
    r = leash(["--limit", f"stdout_print={n - 1}", "-e", code])
    assert r.status == 4 and r.diag["kind"] == "stdout" and r.out == "", r
    # the run's budget (the newline included)
    r = leash(["--limit", f"stdout={n + 1}", "-e", code])
    assert r.status == 0 and r.out == text + "\n", r
    r = leash(["--limit", f"stdout={n}", "-e", code])
    assert r.status == 4 and r.diag["kind"] == "stdout" and r.out == "", r
    for lim in (["--limit", f"stdout={n}"], ["--limit", f"stdout_print={n - 1}"], ["--limit", "json=10"]):
        a = leash([*lim, "-e", f"print(json.stringify({v}))"])
        b = leash([*lim, "-e", code])
        sa, sb = seen(a, "json.stringify"), seen(b, "json.print")
        assert sa == sb, (a, b)


def test_a_big_document_round_trip_in_chunks(tmp_path):
    doc = big_doc(60000)  # about 7 MB
    f = tmp_path / "d.json"
    f.write_bytes(doc)
    out = tmp_path / "o.json"
    code = "v = json.read(file.open(args()[0]))\njson.write(args()[1], v, 1)\njson.print(v)\n"
    r = leash([*BIG, "--allow-files", "--max-memory", "256M", script(tmp_path, "b.lsh", code), f, out])
    assert r.status == 0, r
    assert json.loads(out.read_bytes()) == json.loads(doc)
    assert out.read_bytes() == doc  # Python's indent=1 layout is JavaScript's
    assert json.loads(r.out) == json.loads(doc)


def test_json_read_stops_at_the_memory_bound(tmp_path):
    doc = big_doc(400000)  # about 47 MB of records
    f = tmp_path / "d.json"
    f.write_bytes(doc)
    r = leash([*BIG, "--allow-read", "--max-memory", "32M", script(tmp_path, "r.lsh", READ), f], cap=512 * MIB)
    assert r.status == 4 and r.diag["limit"] == "memory", r


def test_hostile_documents(tmp_path):
    r = script(tmp_path, "r.lsh", "v = json.read(file.open(args()[0]))\nprint(len(v))\n")
    # nested as deep as the ceiling allows: read; one more: the json limit
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 4096 + b"]" * 4096)
    x = leash([*BIG, "--allow-read", r, deep])
    assert x.status == 0 and x.out == "1\n", x
    deep.write_bytes(b"[" * 4097 + b"]" * 4097)
    x = leash([*BIG, "--allow-read", r, deep])
    assert x.status == 4 and x.diag["kind"] == "json", x
    # a million opening brackets: the depth limit, long before the end
    deep.write_bytes(b"[" * 1_000_000)
    x = leash([*BIG, "--allow-read", r, deep])
    assert x.status == 4 and x.diag["kind"] == "json", x
    # one 64 MB string: held once as it is read, then as the value
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as fh:
        fh.write(b'["')
        fh.write(b"ab\\n" * (16 * MIB))
        fh.write(b'"]')
    x = leash([*BIG, "--allow-read", "--max-memory", "512M", r, huge], cap=1024 * MIB)
    assert x.status == 0 and x.out == "1\n", x
    x = leash([*BIG, "--allow-read", "--max-memory", "64M", r, huge], cap=512 * MIB)
    assert x.status == 4 and x.diag["kind"] == "memory", x
    # an unterminated string to the end of a large file
    huge.write_bytes(b'["' + b"x" * (8 * MIB))
    x = leash([*BIG, "--allow-read", r, huge])
    assert x.status == 1 and "unexpected end of input in a string at line 1, column" in x.diag["message"], x
    # white space only, many MB: constant memory, then a parse error at the end
    ws = tmp_path / "ws.json"
    ws.write_bytes(b" \n" * (10 * MIB))
    x = leash([*BIG, "--allow-read", "--max-memory", "8M", r, ws])
    assert x.status == 1 and f"at line {10 * MIB + 1}, column 1" in x.diag["message"], x
