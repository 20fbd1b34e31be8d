"""Functions and scope (SPEC 6): locals, globals, hoisting, recursion, arity, names."""
import pytest


@pytest.mark.parametrize("call", ["push(l, 1)", "pop(l)", "insert(l, 0, 1)", "remove(l, 0)"])
def test_place_builtins_count_as_assignment(fails, call):
    r = fails(f"l = [1]\nfn f()\n{call}\nend\nf()", "name", line=3, status=3)
    assert any("global l" in h for h in r.diag["help"]), r.diag
    # Assigned in the function too: a local, read before its assignment at run time.
    fails(f"l = [1]\nfn f()\n{call}\nl = []\nend\nf()", "name", line=3)


# --- arity and names at load time -------------------------------------------------


@pytest.mark.parametrize(
    "src,kind",
    [
        ("fn f(a)\nend\nf()", "arity"),
        ("fn f(a)\nend\nf(1, 2)", "arity"),
        ("fn f()\nend\nx = f(1)", "arity"),
        ("x = len()", "arity"),
        ("x = len(1, 2)", "arity"),
        ("x = type()", "arity"),
        ("x = str(1, 2)", "arity"),
        ("x = keys()", "arity"),
        ("x = get([1])", "arity"),
        ("x = get([1], 0, 1, 2)", "arity"),
        ("x = slice([1])", "arity"),
        ("x = range()", "arity"),
        ("x = range(1, 2, 3, 4)", "arity"),
        ("x = split()", "arity"),
        ("x = split(\"a\", \"b\", 1, 2)", "arity"),
        ("x = exit(1, 2)", "arity"),
        ("x = abs(1, 2)", "arity"),
        ("x = round(1, 2, 3)", "arity"),
        ("x = pad_left(\"a\")", "arity"),
        ("x = replace(\"a\", \"b\")", "arity"),
        ("x = assert()", "arity"),
        ("x = assert_eq(1)", "arity"),
        ("x = math.sin()", "arity"),
        ("x = rand.int(1)", "arity"),
        ("x = stdin.read_line(1)", "arity"),
        ("x = env.get()", "arity"),
        ("x = chr(1, 2)", "arity"),
        ("x = args(1)", "arity"),
        ("x = nosuch(1)", "name"),
        ("nosuch()", "name"),
        ("x = math.nosuch(1)", "name"),
        ("x = rand.nope()", "name"),
        ("fn f()\nend\nfn f()\nend", "name"),
        ("fn f(a, a)\nend", "name"),
        ("fn len()\nend", "name"),
        ("fn print(x)\nend", "name"),
        ("fn push(a, b)\nend", "name"),
    ],
)
def test_load_time_call_checks(script, src, kind):
    r = script(src + "\n")
    assert r.status == 3, r
    assert r.diag["error"] == "load" and r.diag["kind"] == kind, r


def test_params_many_pass(ok):
    # A header line holds at most 1,024 tokens: `fn f(` `)` plus n names and n-1 commas,
    # so 510 parameters is the most one line can declare (2 * 510 + 3 = 1,023 tokens).
    params = ", ".join(f"p{i}" for i in range(510))
    argl = ", ".join(str(i) for i in range(510))
    assert ok(f"fn f({params})\nreturn p0 + p509\nend\nx = f({argl})\nprint(x)") == "509\n"


def test_params_limit_1025_fail(script):
    # 1,025 parameters: the params limit (1,024) and the tokens limit are both exceeded;
    # either is a correct load-time report.
    params = ", ".join(f"p{i}" for i in range(1025))
    r = script(f"fn f({params})\nend\n")
    assert r.status == 3, r
    assert r.diag["error"] == "load" and r.diag["kind"] in ("params", "tokens"), r
    assert r.diag["line"] == 1


def test_call_depth_stats(script):
    code = "fn d(n)\nif n > 0\nd(n - 1)\nend\nend\nd(N)\n"
    r = script(code.replace("N", "10"), opts=["--stats"])
    assert r.stats["max_call_depth"] == 12
    r = script(code.replace("N", "62"), opts=["--stats"])
    assert r.status == 0 and r.stats["max_call_depth"] == 64
