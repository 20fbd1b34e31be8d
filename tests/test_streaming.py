"""Issue 25, SPEC 10: streaming for any size. `json.next(source)` reads JSON Lines from
stdin ("-"), a file reader or a socket; `csv.open("-")` reads CSV from stdin. A filter
over a stream runs in constant memory (checked with a small --max-memory over an input
many times its size); a bad line is named by its number."""
import json

from conftest import run_capped

MIB = 1024 * 1024
BIG = ["--limit", "all=max", "--max-steps", "100000000", "--max-work", "100000000000"]

FILTER = """n = 0
total = 0
while true
  v = json.next("-")
  if v == nil
    break
  end
  if v.kind == "b"
    n += 1
    total += v.n
  end
end
print(n, total)
"""


def leash(args, input=b"", cap=1024 * MIB, cwd=None, timeout=300):
    return run_capped(args, input, cap, cwd, timeout)


def json_lines(n):
    rows = [{"kind": "ab"[i % 2], "n": i, "pad": "x" * 60} for i in range(n)]
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def test_json_lines_filter_from_stdin_runs_in_constant_memory(tmp_path):
    n = 400_000  # about 40 MB of input, under an 8 MiB memory bound
    data = json_lines(n)
    assert len(data) > 30 * MIB
    p = tmp_path / "f.lsh"
    p.write_text(FILTER)
    r = leash([*BIG, "--max-memory", "8M", "--stats", p], input=data)
    assert r.status == 0, r
    odd = range(1, n, 2)
    assert r.out == f"{len(odd)} {sum(odd)}\n", r
    assert r.stats["stdin_bytes"] == len(data), r.stats
    # by default the stdin budget (16 MiB) stops it, and says how to move it
    r = leash(["--max-steps", "100000000", "--max-work", "100000000000", p], input=data)
    assert r.status == 4 and r.diag["limit"] == "stdin" and r.diag["option"] == "--limit stdin=64M", r


def test_json_next_names_the_bad_line(tmp_path):
    p = tmp_path / "f.lsh"
    p.write_text(FILTER)
    data = b'{"kind":"b","n":1}\n\n{"kind":"b","n":2}\n{"kind": "b", "n": }\n{"kind":"b","n":3}\n'
    r = leash([p], input=data)
    assert r.status == 1 and r.diag["kind"] == "parse", r
    assert r.diag["message"].startswith("json.next: line 4: "), r
    assert "column 20" in r.diag["message"], r
    # caught, the stream goes on after the bad line
    p.write_text(
        """n = 0
while true
  try
    v = json.next("-")
  catch e
    print(e.message)
    continue
  end
  if v == nil
    break
  end
  n += 1
end
print(n)
"""
    )
    r = leash([p], input=data)
    assert r.status == 0 and r.out.splitlines()[-1] == "3", r


def test_json_next_from_a_file_reader_and_its_limits(tmp_path):
    (tmp_path / "in.jsonl").write_bytes(b'[1]\n{"a": [2, 3]}\n"s"\n')
    p = tmp_path / "f.lsh"
    p.write_text('r = file.open("in.jsonl")\nwhile true\n  v = json.next(r)\n  if v == nil\n    break\n  end\n  print(v)\nend\n')
    r = leash(["--allow-read", p], cwd=tmp_path)
    assert r.status == 0 and r.out == '[1]\n{"a":[2,3]}\ns\n', r
    # a line past json_depth is the json limit, naming the line
    (tmp_path / "in.jsonl").write_bytes(b"[1]\n[[[]]]\n")
    r = leash(["--allow-read", "--limit", "json_depth=2", p], cwd=tmp_path)
    assert r.status == 4 and r.diag["limit"] == "json_depth" and "line 2" in r.diag["message"], r
    # a value that is not a source
    for bad, kind in [('json.next("x.jsonl")', "value"), ("json.next(5)", "type")]:
        r = leash(["-e", bad])
        assert r.status == 1 and r.diag["kind"] == kind, r


def test_json_next_from_a_socket(tmp_path):
    code = """l = net.listen("", 0)
c = net.connect("127.0.0.1", net.addr(l).port)
a = net.accept(l, 5000)
net.send(a, "{\\"x\\": 1}\\n[2]\\n")
net.close(a)
while true
  v = json.next(c)
  if v == nil
    break
  end
  print(v)
end
"""
    r = leash(["--allow-network", "--allow-listen", "-e", code], timeout=60)
    assert r.status == 0 and r.out == '{"x":1}\n[2]\n', r


def test_csv_open_stdin_filter_runs_in_constant_memory(tmp_path):
    n = 500_000
    data = ("id,name,score\n" + "".join(f"{i},name {i},{i % 100}\n" for i in range(n))).encode()
    p = tmp_path / "f.lsh"
    p.write_text(
        """r = csv.open("-", {header: true})
n = 0
total = 0
while true
  row = csv.next(r)
  if row == nil
    break
  end
  if row.score == "99"
    n += 1
    total += num(row.id)
  end
end
print(n, total)
"""
    )
    r = leash([*BIG, "--allow-read", "--max-memory", "8M", p], input=data)
    assert r.status == 0, r
    ids = [i for i in range(n) if i % 100 == 99]
    assert r.out == f"{len(ids)} {sum(ids)}\n", r


def test_csv_open_stdin_names_a_ragged_line(tmp_path):
    p = tmp_path / "f.lsh"
    p.write_text('r = csv.open("-")\nwhile csv.next(r) != nil\nend\nprint("done")\n')
    r = leash(["--allow-read", p], input=b"a,b\n1,2\n3\n")
    assert r.status == 1 and r.diag["kind"] == "parse" and "line 3" in r.diag["message"], r
    r = leash(["--allow-read", p], input=b"a,b\n1,2\n")
    assert r.status == 0 and r.out == "done\n", r


def test_json_parse_of_a_document_too_big_stops_while_it_parses(tmp_path):
    """The parser looks at the heap bound every 4,096 values: a 20 MB document under
    --max-memory 16M stops with `memory` from the heap check, well before the whole
    value (several times the text) is built."""
    doc = "[" + ",".join('{"id":%d,"name":"user %d","tags":["a","b"]}' % (i, i) for i in range(450_000)) + "]"
    (tmp_path / "d.json").write_text(doc)
    p = tmp_path / "t.lsh"
    p.write_text('v = json.parse(file.read("d.json"))\nprint(len(v))\n')
    r = leash([*BIG, "--allow-read", "--max-memory", "32M", p], cwd=tmp_path)
    assert r.status == 4 and r.diag["kind"] == "memory", r
    assert "heap" in r.diag["message"], r
    r = leash([*BIG, "--allow-read", "--max-memory", "1G", p], cwd=tmp_path, cap=3072 * MIB)
    assert r.status == 0 and r.out == "450000\n", r


def test_csv_parse_of_a_file_too_big_stops_while_it_parses(tmp_path):
    data = "".join(f"{i},name {i},{i % 100}\n" for i in range(400_000))
    (tmp_path / "d.csv").write_text(data)
    p = tmp_path / "t.lsh"
    p.write_text('rows = csv.parse(file.read("d.csv"))\nprint(len(rows))\n')
    r = leash([*BIG, "--allow-read", "--max-memory", "32M", p], cwd=tmp_path)
    assert r.status == 4 and r.diag["kind"] == "memory" and "heap" in r.diag["message"], r
    r = leash([*BIG, "--allow-read", "--max-memory", "1G", p], cwd=tmp_path, cap=3072 * MIB)
    assert r.status == 0 and r.out == "400000\n", r


def test_json_parse_of_repeated_values_still_stops_at_the_memory_bound(tmp_path):
    """Equal string values share one box while parsed; the heap check still stops a
    document whose containers outgrow --max-memory, and a smaller bound than the
    document needs is never passed by more than the check interval."""
    doc = "[" + ",".join('["on","off","on"]' for _ in range(1_000_000)) + "]"
    (tmp_path / "d.json").write_text(doc)
    p = tmp_path / "t.lsh"
    p.write_text('v = json.parse(file.read("d.json"))\nprint(len(v), v[999999][1])\n')
    r = leash([*BIG, "--allow-read", "--max-memory", "48M", p], cwd=tmp_path)
    assert r.status == 4 and r.diag["kind"] == "memory", r
    r = leash([*BIG, "--allow-read", "--max-memory", "1G", p], cwd=tmp_path, cap=3072 * MIB)
    assert r.status == 0 and r.out == "1000000 off\n", r


def test_parsed_records_fit_in_the_memory_they_hold(tmp_path):
    """Records of six fields parse into small maps (one vector of entries, no hash
    index, accounted for what they hold): 100,000 of them (11.8 MB of JSON) parse under
    --max-memory 72M, where the indexed maps needed 88M (memory at 72M, then
    frame_storage at 80M, the accounted size passing the bound)."""
    recs = [
        {"id": n, "name": "user %d" % n, "email": "u%d@example.com" % n, "score": n * 0.37,
         "tags": ["a", "bb", "ccc"], "active": n % 3 == 0}
        for n in range(100_000)
    ]
    (tmp_path / "d.json").write_text(json.dumps(recs, separators=(",", ":")))
    p = tmp_path / "t.lsh"
    p.write_text('v = json.parse(file.read("d.json"))\nprint(len(v), v[99999].email, keys(v[5]))\n')
    r = leash([*BIG, "--allow-read", "--max-memory", "72M", p], cwd=tmp_path)
    assert r.status == 0, r
    assert r.out == '100000 u99999@example.com ["id","name","email","score","tags","active"]\n', r
    r = leash([*BIG, "--allow-read", "--max-memory", "32M", p], cwd=tmp_path)
    assert r.status == 4 and r.diag["kind"] == "memory", r
