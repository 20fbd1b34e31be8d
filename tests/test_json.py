"""json.parse / json.stringify: RFC 8259 conformance (JSONTestSuite), layout, bounds."""
import json
import math

import pytest

from conftest import ROOT, run

CORPUS = ROOT / "tests" / "corpora" / "JSONTestSuite" / "test_parsing"  # vendored, MIT

# Reads one JSON text from stdin, parses it, writes it back compactly, parses that again
# and checks both parses agree. Prints "ok" and the compact text, or "error KIND".
ROUND_TRIP = """\
s = stdin.read(1048576)
if s == nil
  s = ""
end
try
  v = json.parse(s)
  t = json.stringify(v)
  assert_eq(json.parse(t), v, "round trip")
  assert_eq(json.parse(json.stringify(v, 2)), v, "indented round trip")
  print("ok")
  write(t)
catch e
  print("error", e.kind)
  print(e.message)
end
"""


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    path = tmp_path_factory.mktemp("json") / "rt.lsh"
    path.write_text(ROUND_TRIP)

    def go(data):
        return run(["--error-format", "json", path], input=data)

    return go


def corpus(prefix):
    if not CORPUS.is_dir():
        return []
    return sorted(p.name for p in CORPUS.iterdir() if p.name.startswith(prefix))


def floats(v):
    """Python's parse with every number as a float, as Leash holds them."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, Obj):
        return Obj((k, floats(x)) for k, x in v)
    return [floats(x) for x in v]


class Obj(list):
    """A JSON object as its (key, value) pairs, in order."""


def py_parse(text):
    def pairs(items):
        seen = {}
        for k, v in items:
            seen[k] = v  # first position, last value
        return Obj(seen.items())

    return floats(json.loads(text, object_pairs_hook=pairs, parse_int=float))


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a[0] == b[0] and same(a[1], b[1])
    return a == b


@pytest.mark.skipif(not CORPUS.is_dir(), reason="JSONTestSuite corpus not beside the repository")
@pytest.mark.parametrize("name", corpus("y_"))
def test_corpus_accepts(round_trip, name):
    data = (CORPUS / name).read_bytes()
    r = round_trip(data)
    assert r.status == 0, r
    head, _, text = r.out.partition("\n")
    assert head == "ok", r
    # What Leash read is what the reference reader reads (numbers as binary64).
    assert same(py_parse(text), py_parse(data.decode("utf-8"))), (text, data)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="JSONTestSuite corpus not beside the repository")
@pytest.mark.parametrize("name", corpus("n_"))
def test_corpus_rejects(round_trip, name):
    r = round_trip((CORPUS / name).read_bytes())
    if r.status == 4:
        assert r.diag["error"] == "limit" and r.diag["kind"] == "json", r
        assert "nested" in r.diag["message"], r
    else:
        assert r.status == 0, r
        assert r.out.startswith("error parse\njson.parse: "), r


@pytest.mark.skipif(not CORPUS.is_dir(), reason="JSONTestSuite corpus not beside the repository")
@pytest.mark.parametrize("name", corpus("i_"))
def test_corpus_implementation_defined(round_trip, name):
    r = round_trip((CORPUS / name).read_bytes())
    assert r.status in (0, 4), r
    if r.status == 4:
        assert r.diag["kind"] == "json", r
    else:
        assert r.out.startswith(("ok\n", "error parse\n")), r


def test_corpus_is_there():
    if not CORPUS.is_dir():
        pytest.skip("JSONTestSuite corpus not beside the repository")
    assert len(corpus("y_")) > 90 and len(corpus("n_")) > 180 and len(corpus("i_")) > 30


@pytest.mark.parametrize(
    "name,outcome",
    [
        ("i_structure_500_nested_arrays.json", "limit"),
        ("i_number_huge_exp.json", "parse"),
        ("i_number_real_underflow.json", "ok"),
        ("i_number_too_big_pos_int.json", "ok"),
        ("i_string_UTF-16LE_with_BOM.json", "parse"),
        ("i_string_invalid_utf-8.json", "parse"),
        ("i_string_lone_second_surrogate.json", "parse"),
        ("i_string_1st_surrogate_but_2nd_missing.json", "parse"),
        ("i_structure_UTF-8_BOM_empty_object.json", "parse"),
    ],
)
def test_implementation_choices(round_trip, name, outcome):
    if not CORPUS.is_dir():
        pytest.skip("JSONTestSuite corpus not beside the repository")
    r = round_trip((CORPUS / name).read_bytes())
    if outcome == "limit":
        assert r.status == 4 and r.diag["kind"] == "json", r
    elif outcome == "ok":
        assert r.out.startswith("ok\n"), r
    else:
        assert r.out.startswith("error parse\n"), r


# ---------------------------------------------------------------------------
# Bounds, each at N and N+1
# ---------------------------------------------------------------------------


def test_benchmark_shape_is_fast(script):
    code = """
recs = []
for i in range(0, 2000)
  push(recs, {id: i, name: "user ${i}", score: i * 1.5})
end
for k in range(0, 20)
  s = json.stringify(recs)
  v = json.parse(s)
end
assert_eq(v, recs)
print(len(s))
"""
    r = script(code, opts=["--max-time", "5"])
    assert r.status == 0, r


def test_shared_string_values_are_copied_on_write(script, tmp_path):
    # A document past 64 KiB shares equal short string values (one box for every
    # "active"); changing one through a record changes only that record.
    recs = ",".join('{"id":%d,"state":"active","tags":["a","b\\u00e9"]}' % i for i in range(3000))
    (tmp_path / "d.json").write_text("[" + recs + "]")
    code = """
v = json.parse(file.read("d.json"))
r = v[6]
r.state = r.state .. "?"
v[7].state = v[7].state .. "!"
v[8].tags[1] = v[8].tags[1] .. "x"
v[9].tags[0] = "z"
print(v[7].state, v[6].state, r.state, v[8].state, len(v))
print(json.stringify(v[8].tags), json.stringify(v[9].tags), json.stringify(v[10].tags))
n = 0
for x in v
  if x.state == "active" and x.tags[0] == "a"
    n += 1
  end
end
print(n)
"""
    r = script(code, opts=["--allow-read", "--limit", "all=max", "--max-steps", "10000000"])
    assert r.status == 0, r
    assert r.out == 'active! active active? active 3000\n["a","béx"] ["z","bé"] ["a","bé"]\n2998\n', r
