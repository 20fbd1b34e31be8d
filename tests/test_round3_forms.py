"""Round-3 forms (SPEC 3, 5, 10): `A if C else B`, `//`, parallel assignment and
unpacking, `return a, b`, and anonymous functions `fn(PARAMS) => EXPR` at a builtin's
function parameter: their results, their errors (at load, in source order, and at run
time), the capture rule, and their steps."""
import json


def steps(script, code):
    r = script(code, opts=["--stats"])
    assert r.status == 0, r
    return r.stats()["steps"] if callable(getattr(r, "stats", None)) else r.json_lines()[-1]["stats"]["steps"]


# ---------------------------------------------------------------------------
# A if C else B
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# // floored division
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Parallel assignment, unpacking, return a, b
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Anonymous functions
# ---------------------------------------------------------------------------


def test_lambda_steps_in_profile_are_at_its_line(script, tmp_path):
    prof = tmp_path / "p.json"
    r = script("x = 1\nxs = map([1, 2, 3], fn(v) => v + x)\n", opts=["--profile", str(prof)])
    assert r.status == 0, r
    text = prof.read_text()
    assert "fn@2" in text, text[:500]


def test_lambda_calls_are_active_calls(script):
    r = script("xs = map([1], fn(x) => map([x], fn(y) => y))\n", opts=["--stats"])
    assert r.status == 0, r
    assert r.json_lines()[-1]["stats"]["max_call_depth"] == 3


def test_check_json_knows_lambdas(leash, tmp_path):
    p = tmp_path / "c.lsh"
    p.write_text('xs = map(["a"], fn(n) => file.read(n))\nlo, hi = 1, 2\nx = 3 // 2 if lo else hi\n')
    r = leash(["check", "--json", str(p)])
    assert r.status == 0, r
    doc = json.loads(r.out)
    text = json.dumps(doc)
    assert "file.read" in text and "read" in text, doc


# ---------------------------------------------------------------------------
# Tools: leash fmt (its round-trip check), the REPL
# ---------------------------------------------------------------------------

MESSY3 = """\
limit=2
xs=[3,1,4]
a ,b=b0 ,b1 if limit else 0
lo,hi = [min(xs),max(xs)]
n=17//5
n//=2
ys=filter(xs,fn (x)=>x>limit)
zs=sort(xs,fn( p , q )=>p>q)
w = map(xs,
fn(x) => -x if x else x // 2)
print(a,b,lo,hi,n,ys,zs,w,"big" if n>1 else "small",tr("ab","a","b"),bit.band(6,3),utf8.len("é"))
"""

CANONICAL3 = """\
limit = 2
xs = [3, 1, 4]
a, b = b0, b1 if limit else 0
lo, hi = [min(xs), max(xs)]
n = 17 // 5
n //= 2
ys = filter(xs, fn(x) => x > limit)
zs = sort(xs, fn(p, q) => p > q)
w = map(xs,
  fn(x) => -x if x else x // 2)
print(a, b, lo, hi, n, ys, zs, w, "big" if n > 1 else "small", tr("ab", "a", "b"), bit.band(6, 3), utf8.len("é"))
"""


def test_fmt_knows_the_new_forms(leash, tmp_path):
    f = tmp_path / "n.lsh"
    f.write_text("b0 = 1\nb1 = 2\n" + MESSY3)
    before = leash([str(f)])
    assert before.status == 0, before
    assert before.out == "1 2 1 4 1 [3,4] [4,3,1] [-3,-1,-4] small bb 2 1\n", before
    r = leash(["fmt", str(f)])
    assert r.status == 0, r
    assert f.read_text() == "b0 = 1\nb1 = 2\n" + CANONICAL3
    after = leash([str(f)])
    assert (after.status, after.out) == (before.status, before.out)
    r = leash(["fmt", "--check", str(f)])
    assert r.status == 0 and r.out == "", r


def test_repl_knows_the_new_forms(tmp_path):
    from test_tools import repl_session

    out, status = repl_session(
        tmp_path,
        [
            "7 // 2",
            '"y" if 1 > 0 else "n"',
            "a, b = 1, 2",
            "a, b = b, a",
            "[a, b]",
            "k = 10",
            "map([1, 2], fn(x) => x + k)",
            "fn(x) => x",
            "utf8.codes(\"é\")",
        ],
        timeout=90,  # nine entries on a loaded machine
    )
    assert status == 0, out
    lines = out.splitlines()
    assert "3" in lines and '"y"' in lines and "[2,1]" in lines and "[11,12]" in lines, out
    assert "anonymous function" in out  # the bare lambda: a load error, and the session goes on
    assert "[233]" in lines, out
