"""Functions and scope (SPEC 6): locals, globals, hoisting, recursion, arity, names."""
import pytest


def test_function_call_and_return(ok):
    assert ok("fn add(a, b)\nreturn a + b\nend\nprint(add(2, 3))") == "5\n"


def test_return_without_value_and_falling_off_end_give_nil(ok):
    code = """fn a()
return
end
fn b()
x = 1
end
fn c()
end
print(a(), b(), c())"""
    assert ok(code) == "nil nil nil\n"


def test_return_exits_from_inside_loops(ok):
    code = """fn locate(l, x)
for i, v in l
while true
if v == x
return i
end
break
end
end
return -1
end
print(locate([5, 6, 7], 7), locate([1], 9))"""
    assert ok(code) == "2 -1\n"


def test_hoisting_call_before_definition(ok):
    assert ok('print(later(2))\nfn later(x)\nreturn x * 10\nend') == "20\n"


def test_mutual_recursion(ok):
    code = """fn is_even(n)
if n == 0
return true
end
return is_odd(n - 1)
end
fn is_odd(n)
if n == 0
return false
end
return is_even(n - 1)
end
print(is_even(10), is_odd(7), is_even(7))"""
    assert ok(code) == "true true false\n"


def test_recursion_fib(ok):
    assert ok("fn fib(n)\nif n < 2\nreturn n\nend\nreturn fib(n - 1) + fib(n - 2)\nend\nprint(fib(15))") == "610\n"


def test_reading_globals_without_declaration(ok):
    assert ok('g = 10\nfn f()\nreturn g + 1\nend\nprint(f())') == "11\n"


def test_global_defined_after_function_definition_but_before_call(ok):
    assert ok("fn f()\nreturn late\nend\nlate = 3\nprint(f())") == "3\n"


def test_reading_global_that_has_no_value_is_name_error(fails):
    fails("fn f()\nreturn late\nend\nprint(f())\nlate = 1", "name", line=2)


def test_assignment_makes_name_local(ok):
    code = """x = "global"
fn f()
x = "local"
return x
end
print(f(), x)"""
    assert ok(code) == "local global\n"


def test_name_assigned_later_in_body_is_local_even_before(fails):
    # x is assigned in f, so it is local throughout f: the read before is a name error.
    fails('x = 1\nfn f()\nprint(x)\nx = 2\nend\nf()', "name", line=3)


def test_assignment_in_unexecuted_branch_still_makes_local(fails):
    fails("x = 1\nfn f()\nif false\nx = 2\nend\nreturn x\nend\nprint(f())", "name", line=6)


def test_compound_assignment_makes_local(fails):
    fails("x = 1\nfn f()\nx += 1\nend\nf()", "name", line=3)


def test_place_assignment_root_is_local(fails):
    # SPEC 7: changing an element of a name the function never assigns, without
    # `global`, is a load error whose help suggests `global m` (it used to be a local
    # read before assignment at run time).
    r = fails("m = {}\nfn f()\nm.a = 1\nend\nf()", "name", line=3, status=3)
    assert any("global m" in h for h in r.diag["help"]), r.diag


@pytest.mark.parametrize("call", ["push(l, 1)", "pop(l)", "insert(l, 0, 1)", "remove(l, 0)"])
def test_place_builtins_count_as_assignment(fails, call):
    r = fails(f"l = [1]\nfn f()\n{call}\nend\nf()", "name", line=3, status=3)
    assert any("global l" in h for h in r.diag["help"]), r.diag
    # Assigned in the function too: a local, read before its assignment at run time.
    fails(f"l = [1]\nfn f()\n{call}\nl = []\nend\nf()", "name", line=3)


@pytest.mark.parametrize("call", ["push(l, 1)", "pop(l)", "insert(l, 0, 1)", "remove(l, 0)"])
def test_place_builtins_on_declared_global(ok, call):
    assert ok(f"l = [5, 6]\nfn f()\nglobal l\n{call}\nend\nf()\nprint(len(l) != 2 or l != [5, 6])") == "true\n"


def test_for_and_catch_names_are_local(ok):
    code = """i = "gi"
k = "gk"
e = "ge"
fn f()
for i = 1 to 2
end
for k in [1]
end
try
throw 1
catch e
end
return [i, k, e.value]
end
print(f(), i, k, e)"""
    assert ok(code) == "[2,1,1] gi gk ge\n"


def test_parameters_are_local(ok):
    assert ok('p = "g"\nfn f(p)\np = p .. "!"\nreturn p\nend\nprint(f("a"), p)') == "a! g\n"


def test_global_declaration(ok):
    code = """count = 0
fn inc(n)
global count
count += n
end
inc(2)
inc(3)
print(count)"""
    assert ok(code) == "5\n"


def test_global_creates_global(ok):
    assert ok("fn f()\nglobal made, other\nmade = 1\nother = 2\nend\nf()\nprint(made, other)") == "1 2\n"


def test_global_for_loop_variable(ok):
    assert ok("fn f()\nglobal i\nfor i = 1 to 3\nend\nend\nf()\nprint(i)") == "3\n"


def test_locals_are_fresh_per_call(fails):
    fails("fn f(first)\nif first\nv = 1\nend\nreturn v\nend\nf(true)\nf(false)", "name", line=5)


def test_recursion_has_separate_locals(ok):
    code = """fn f(n)
local_v = n
if n > 0
f(n - 1)
end
return local_v
end
print(f(5))"""
    assert ok(code) == "5\n"


def test_function_sees_global_changes(ok):
    assert ok("g = 1\nfn f()\nreturn g\nend\ng = 2\nprint(f())\ng = 3\nprint(f())") == "2\n3\n"


def test_main_variables_unseen_in_function_locals(ok):
    assert ok("x = 5\nfn f(y)\nreturn x + y\nend\nprint(f(1))") == "6\n"


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


def test_unreachable_function_is_still_validated(script):
    r = script('print("main")\nfn never()\nx = unknown_fn()\nend\n')
    assert r.status == 3 and r.diag["kind"] == "name" and r.diag["line"] == 3
    assert r.out == ""


def test_variables_may_shadow_builtin_names(ok):
    assert ok("max = 1\nlen = 2\nprint = 3\nx = max + len + print\nwrite(x, \"\\n\")\nprint(max(4, 5))") == "6\n5\n"


@pytest.mark.parametrize(
    "ns",
    ["math", "rand", "json", "csv", "date", "re", "url", "html", "base64", "hash", "file", "dir",
     "stdin", "env", "http", "net", "db"],
)
@pytest.mark.parametrize("form", ["{ns} = 1", "fn {ns}()\nend", "fn f({ns})\nend", "for {ns} in []\nend",
                                  "try\nx = 1\ncatch {ns}\nend", "fn g()\nglobal {ns}\nend"])
def test_namespace_names_are_reserved(script, ns, form):
    r = script(form.format(ns=ns) + "\n")
    assert r.status == 3, r
    assert r.diag["error"] == "load" and r.diag["kind"] == "name", r


def test_namespace_as_value_is_load_error(script):
    r = script("x = math\n")
    assert r.status == 3 and r.diag["error"] == "load"


def test_fn_only_at_top_level(script):
    for src in ["if true\nfn f()\nend\nend", "fn f()\nfn g()\nend\nend", "while false\nfn f()\nend\nend"]:
        r = script(src + "\n")
        assert r.status == 3 and r.diag["kind"] == "structure", (src, r)


@pytest.mark.parametrize("src", ["return 1", "return", "if true\nreturn\nend", "global x", "for i = 1 to 2\nglobal x\nend"])
def test_return_and_global_outside_function(script, src):
    r = script(src + "\n")
    assert r.status == 3 and r.diag["kind"] == "structure", r


def test_global_anywhere_in_body(script):
    # docs/LANGUAGE.md: a name listed in `global` anywhere in the body is global.
    r = script("fn f()\nx = 1\nglobal x\nend\nf()\nprint(x)\n")
    assert (r.status, r.out) == (0, "1\n"), r


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


def test_call_depth_64_including_main(ok, fails):
    code = """fn d(n)
if n == 0
return 0
end
return d(n - 1) + 1
end
print(d(N))"""
    # main + d(62) ... d(0): 64 active calls.
    assert ok(code.replace("N", "62")) == "62\n"
    r = fails(code.replace("N", "63"), "call_depth", status=4)


def test_call_depth_stats(script):
    code = "fn d(n)\nif n > 0\nd(n - 1)\nend\nend\nd(N)\n"
    r = script(code.replace("N", "10"), opts=["--stats"])
    assert r.stats["max_call_depth"] == 12
    r = script(code.replace("N", "62"), opts=["--stats"])
    assert r.status == 0 and r.stats["max_call_depth"] == 64


def test_builtins_are_not_active_calls(ok):
    # 63 user frames plus main, and builtins on top of the deepest one.
    code = """fn d(n)
if n == 0
return len(str(sort([3, 1, 2])))
end
return d(n - 1)
end
print(d(62))"""
    assert ok(code) == "7\n"


def test_call_depth_is_not_catchable(script):
    code = """fn forever(n)
return forever(n + 1)
end
try
forever(0)
catch e
print("caught")
end
print("after")"""
    r = script(code)
    assert r.status == 4 and r.diag["kind"] == "call_depth" and r.diag["error"] == "limit", r
    assert r.out == ""


def test_argument_evaluation_order_left_to_right(ok):
    code = """fn t(x)
write(x)
return x
end
fn f(a, b, c)
return a + b + c
end
print("", f(t(1), t(2), t(3)))"""
    assert ok(code) == "123 6\n"


def test_function_name_is_not_a_value(script):
    r = script("fn f()\nend\nx = f\n")
    assert r.status in (1, 3), r
    assert r.diag["kind"] == "name"
