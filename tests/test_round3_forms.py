"""Round-3 forms (SPEC 3, 5, 10): `A if C else B`, `//`, parallel assignment and
unpacking, `return a, b`, and anonymous functions `fn(PARAMS) => EXPR` at a builtin's
function parameter: their results, their errors (at load, in source order, and at run
time), the capture rule, and their steps."""
import json

from conftest import lines_of


def steps(script, code):
    r = script(code, opts=["--stats"])
    assert r.status == 0, r
    return r.stats()["steps"] if callable(getattr(r, "stats", None)) else r.json_lines()[-1]["stats"]["steps"]


# ---------------------------------------------------------------------------
# A if C else B
# ---------------------------------------------------------------------------


def test_conditional_picks_a_side(ok):
    code = lines_of(
        "x = 5",
        'print("big" if x > 3 else "small", "big" if x > 9 else "small")',
        'print("${"yes" if x else "no"}")',
    )
    assert ok(code) == "big small\nyes\n"


def test_conditional_is_loosest_and_right_associative(ok):
    code = lines_of(
        "print(1 + 2 if false else 3 + 4)",  # (1 + 2) if false else (3 + 4)
        "print(nil or 5 if true else 6)",  # (nil or 5) if true else 6
        "n = 0",
        'print("neg" if n < 0 else "zero" if n == 0 else "pos")',
        "print((1 if false else 2) * 10)",
    )
    assert ok(code) == "7\n5\nzero\n20\n"


def test_conditional_short_circuits(ok):
    # Only the chosen side runs: neither the division by zero nor the unknown key.
    code = lines_of(
        "m = {}",
        "print(1 / 0 if false else 2, m.nope if m else \"empty\")",
    )
    assert ok(code) == "2 empty\n"


def test_conditional_condition_error_is_reported(fails):
    fails('x = 1 if 1 / 0 else 2\n', "arith", line=1)


def test_conditional_needs_else(fails):
    fails("x = 1 if true\n", "syntax", status=3, line=1)


def test_conditional_costs_no_extra_step(script):
    assert steps(script, "x = 1 if true else 2\ny = 3 if x else 4\n") == 2


# ---------------------------------------------------------------------------
# // floored division
# ---------------------------------------------------------------------------


def test_floor_division(ok):
    code = lines_of(
        "print(7 // 2, -7 // 2, 7 // -2, -7 // -2, 7.5 // 2, 0 // 5)",
        "print(9007199254740991 // 2, 1 // 3, -1 // 3)",
        "x = 17",
        "x //= 5",
        "print(x, 6 // 4 * 2, 2 + 7 // 2)",
    )
    assert ok(code) == "3 -4 -4 3 3 0\n4503599627370495 0 -1\n3 2 5\n"


def test_floor_division_agrees_with_modulo(ok):
    # a == (a // b) * b + a % b, as in Python.
    code = lines_of(
        "bad = 0",
        "for a = -20 to 20",
        "  for b in [-7, -3, -1, 1, 2, 5, 2.5]",
        "    if (a // b) * b + a % b != a",
        "      bad += 1",
        "    end",
        "  end",
        "end",
        "print(bad)",
    )
    assert ok(code) == "0\n"


def test_floor_division_errors(fails):
    fails("x = 1 // 0\n", "arith", line=1)
    fails('x = "a" // 2\n', "type", line=1)
    fails("x = 1e308 // 1e-308\n", "arith", line=1)


def test_slash_slash_comment_still_gets_help(script):
    r = script("x = 1 // the answer\n")
    assert r.status == 3
    assert "comments start with `#`" in r.diag.get("help", r.err) or "comments start with `#`" in r.err


# ---------------------------------------------------------------------------
# Parallel assignment, unpacking, return a, b
# ---------------------------------------------------------------------------


def test_swap_and_parallel_assignment(ok):
    code = lines_of(
        "a = 1",
        "b = 2",
        "a, b = b, a",
        "print(a, b)",
        "x, y, z = 1, a + b, [a]",
        "print(x, y, z)",
        "a, b = a + b, a",  # every right side first
        "print(a, b)",
    )
    assert ok(code) == "2 1\n1 3 [2]\n3 2\n"


def test_element_targets_left_to_right(ok):
    code = lines_of(
        "xs = [10, 20, 30]",
        "xs[0], xs[2] = xs[2], xs[0]",
        "print(xs)",
        "i = 0",
        "i, xs[i] = 1, 99",  # i is assigned first, then xs[1]
        "print(i, xs)",
        "m = {}",
        "m.a, m.b = 1, 2",
        "print(m)",
    )
    assert ok(code) == '[30,20,10]\n1 [30,99,10]\n{"a":1,"b":2}\n'


def test_unpacking_a_returned_pair(ok):
    code = lines_of(
        "fn bounds(xs)",
        "  return min(xs), max(xs)",
        "end",
        "lo, hi = bounds([3, 1, 4, 1, 5])",
        "print(lo, hi, bounds([2]))",
        "for k, v in {a: 1}",
        "  p, q = [k, v]",
        "end",
        "print(p, q)",
    )
    assert ok(code) == '1 5 [2,2]\na 1\n'


def test_unpacking_in_a_function_makes_locals(ok):
    code = lines_of(
        "a = 1",
        "fn f()",
        "  a, b = 5, 6",
        "  return a + b",
        "end",
        "print(f(), a)",
    )
    assert ok(code) == "11 1\n"


def test_unpacking_count_mismatch_names_both_counts(fails):
    r = fails("a, b = [1, 2, 3]\n", "value", line=1)
    assert "3" in r.diag["message"] and "2" in r.diag["message"], r.diag
    r = fails("a, b, c = [1]\n", "value", line=1)
    assert "1 item" in r.diag["message"] and "3" in r.diag["message"], r.diag


def test_unpacking_a_non_list_is_a_type_error(fails):
    fails("a, b = 1\n", "type", line=1)
    fails('a, b = {"a": 1, "b": 2}\n', "type", line=1)


def test_unpacking_errors_are_catchable(ok):
    code = lines_of("try", "  a, b = [1]", "catch e", "  print(e.kind)", "end")
    assert ok(code) == "value\n"


def test_parallel_count_mismatch_is_a_load_error(fails):
    r = fails("a, b, c = 1, 2\n", "syntax", status=3, line=1)
    assert "3 targets but 2 values" in r.diag["message"]
    r = fails("x = 1, 2\n", "syntax", status=3, line=1)
    assert "[" in r.err  # help: write a list


def test_parallel_assignment_targets_must_be_places(fails):
    fails("a, f(1) = 1, 2\n", "syntax", status=3, line=1)
    fails("a, b += 1, 2\n", "syntax", status=3, line=1)
    fails("json, b = 1, 2\n", "name", status=3, line=1)


def test_parallel_assignment_is_one_step(script):
    assert steps(script, "a, b = 1, 2\na, b = b, a\nx, y = [a, b]\n") == 3


# ---------------------------------------------------------------------------
# Anonymous functions
# ---------------------------------------------------------------------------


def test_lambdas_at_every_function_parameter(ok):
    code = lines_of(
        "limit = 2",
        "xs = [3, 1, 4, 1, 5]",
        "print(map(xs, fn(x) => x * 10))",
        "print(filter(xs, fn(x) => x > limit))",
        "print(sort(xs, fn(a, b) => a > b))",
        "print(reduce(xs, fn(acc, x) => acc + x, 0))",
        "print(any(xs, fn(x) => x > 4), all(xs, fn(x) => x > 0), count(xs, fn(x) => x == 1))",
        "print(group_by(xs, fn(x) => x % 2))",
        'people = [{name: "ann", age: 40}, {name: "bo", age: 30}]',
        "print(map(sort_by(people, fn(p) => p.age), fn(p) => p.name))",
        'print(re.replace("[0-9]+", "a1b22", fn(g) => "<" .. g[0] .. ">"))',
    )
    assert ok(code) == (
        "[30,10,40,10,50]\n[3,4,5]\n[5,4,3,1,1]\n14\ntrue true 2\n"
        '{"1":[3,1,1,5],"0":[4]}\n["bo","ann"]\na<1>b<22>\n'
    )


def test_lambda_with_a_parameter_from_the_enclosing_function(ok):
    # The point of it all: a predicate that takes a parameter.
    code = lines_of(
        "fn older_than(people, n)",
        "  return filter(people, fn(p) => p.age > n)",
        "end",
        'ps = [{name: "a", age: 50}, {name: "b", age: 20}]',
        "print(len(older_than(ps, 40)), len(older_than(ps, 10)))",
    )
    assert ok(code) == "1 2\n"


def test_nested_lambdas_capture_through(ok):
    code = lines_of(
        "k = 1",
        "rows = [[1, 2, 3], [4, 5]]",
        "print(map(rows, fn(r) => filter(r, fn(v) => v > k + len(r) - 2)))",
        "print(map(rows, fn(r) => map(r, fn(v) => v * len(r))))",
    )
    assert ok(code) == "[[3],[4,5]]\n[[3,6,9],[8,10]]\n"


def test_lambda_calls_user_functions_and_builtins(ok):
    code = lines_of(
        "fn sq(x)",
        "  return x * x",
        "end",
        'print(map([1, 2, 3], fn(x) => sq(x) + len(str(x))), map(["a"], fn(s) => upper(s)))',
    )
    assert ok(code) == '[2,5,10] ["A"]\n'


def test_capture_is_by_value_at_call_start(ok):
    # `bump` changes the global k while map runs; the lambda keeps the k it captured.
    code = lines_of(
        "k = 1",
        "fn bump(x)",
        "  global k",
        "  k += 10",
        "  return x",
        "end",
        "print(map([1, 2, 3], fn(x) => bump(x) + k), k)",
        "print(map([1], fn(x) => x + k))",
    )
    assert ok(code) == "[2,3,4] 31\n[32]\n"


def test_capture_of_a_container_is_a_copy(ok):
    # The lambda's parameter and captures are copies: changing them in a called
    # function changes nothing outside.
    code = lines_of(
        "fn grow(xs)",
        "  push(xs, 0)",
        "  return len(xs)",
        "end",
        "base = [1, 2]",
        "print(map([1, 2], fn(x) => grow(base)), base)",
    )
    assert ok(code) == "[3,3] [1,2]\n"


def test_capture_of_an_unset_local_is_a_name_error_at_call_start(fails):
    code = lines_of(
        "fn f()",
        "  if false",
        "    k = 1",
        "  end",
        "  return map([1], fn(x) => x + k)",
        "end",
        "print(f())",
    )
    fails(code, "name", line=5)


def test_lambda_cannot_assign(fails):
    fails("ys = []\nxs = map([1], fn(x) => push(ys, x))\n", "syntax", status=3, line=2)
    fails("xs = map([1], fn(x) => x = 1)\n", "syntax", status=3, line=1)
    fails("xs = map([1], fn(x) => extend(x, [1]))\n", "syntax", status=3, line=1)


def test_lambda_runtime_error_names_its_line(fails):
    code = lines_of("xs = [1, 0]", "ys = map(xs,", "  fn(x) => 1 / x)")
    fails(code, "arith", line=3)
    fails("print(map([1, \"a\"], fn(x) => x + 1))\n", "type", line=1)


def test_lambda_arity_is_checked_at_load(fails):
    r = fails("xs = map([1], fn(a, b) => a)\n", "arity", status=3, line=1)
    assert "`map` calls it with 1 argument" in r.diag["message"]
    fails("xs = sort([1], fn(a) => a)\n", "arity", status=3, line=1)
    fails("xs = reduce([1], fn(a) => a, 0)\n", "arity", status=3, line=1)


def test_lambda_names_are_checked_at_load(fails):
    fails("xs = map([1], fn(x) => x + nope)\n", "name", status=3, line=1)
    fails("xs = map([1], fn(x) => nope(x))\n", "name", status=3, line=1)
    fails("xs = sort([1], fn(x, x) => x)\n", "name", status=3, line=1)
    fails("xs = map([1], fn(json) => 1)\n", "name", status=3, line=1)


def test_load_errors_in_source_order(script):
    code = lines_of(
        "fn never()",
        "  xs = map([1], fn(a, b) => a)",
        "  ys = filter([1], fn(x) => x > missing + also_missing(x))",
        "end",
        "zs = sort([1], fn(a) => a)",
    )
    r = script(code)
    assert r.status == 3
    got = [(d["kind"], d["line"], d.get("column")) for d in r.diags]
    assert got == [("arity", 2, 17), ("name", 3, 33), ("name", 3, 43), ("arity", 5, 16)], got


def test_lambda_stored_or_returned_is_a_load_error(fails):
    r = fails("double = fn(x) => x * 2\n", "syntax", status=3, line=1)
    assert "fn double(" in r.err
    fails("fn f()\n  return fn(x) => x\nend\n", "syntax", status=3, line=2)
    fails("print(fn(x) => x)\n", "syntax", status=3, line=1)
    fails("fn g(h)\nend\ng(fn(x) => x)\n", "syntax", status=3, line=3)
    fails("x = [fn(x) => x]\n", "syntax", status=3, line=1)


def test_block_lambda_gets_help(script):
    r = script("xs = map([1, 2], fn(x) x * 2 end)\n")
    assert r.status == 3
    assert r.diag["kind"] == "syntax" and r.diag["column"] == 18, r.diag
    assert "fn(x) => x * 2" in r.err
    r = script("xs = map([1, 2], fn(x)\n  return x * 2\nend)\n")
    assert r.status == 3 and "=>" in r.err, r
    r = script("xs = map([1, 2], lambda x: x * 2)\n")
    assert r.status == 3 and "fn(x) =>" in r.err, r


def test_lambda_call_costs_one_step_at_its_line(script):
    # map over 3 items: 1 step for the line, 1 per call of the lambda.
    assert steps(script, "xs = map([1, 2, 3], fn(x) => x)\n") == 4
    # The same as a named function whose body is one return.
    assert steps(script, "fn id(x)\n  return x\nend\nxs = map([1, 2, 3], id)\n") == 4
    # Nested: 1 + 2 outer calls + 3 inner calls.
    assert steps(script, "xs = map([[1, 2], [3]], fn(r) => map(r, fn(v) => v))\n") == 6


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


def test_lambda_steps_limit(script):
    code = "xs = map(range(0, 10), fn(x) => x)\n"
    r = script(code, opts=["--max-steps", "11"])
    assert r.status == 0, r
    r = script(code, opts=["--max-steps", "10"])
    assert r.status == 4 and r.diag["kind"] == "steps", r


def test_lambda_recursion_through_named_function_hits_call_depth(fails):
    code = lines_of(
        "fn deep(n)",
        "  return map([n], fn(x) => deep(x + 1))",
        "end",
        "print(deep(0))",
    )
    fails(code, "call_depth", status=4)


def test_lambda_in_interpolation_and_condition(ok):
    code = lines_of(
        "xs = [1, 2]",
        'print("${map(xs, fn(x) => x + 1)}")',
        "if any(xs, fn(x) => x > 1)",
        '  print("some")',
        "end",
        "y = len(filter(xs, fn(x) => x > 1)) if xs else 0",
        "print(y)",
    )
    assert ok(code) == "[2,3]\nsome\n1\n"


def test_lambda_over_multiple_lines(ok):
    code = lines_of(
        "xs = sort_by(",
        '  [{n: "b", a: 2}, {n: "a", a: 1}],',
        "  fn(p) => [",
        "    p.a,",
        "    p.n,",
        "  ][0]",
        ")",
        "print(xs)",
    )
    assert ok(code) == '[{"n":"a","a":1},{"n":"b","a":2}]\n'


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
