"""Statements (SPEC 5): assignment, places, control flow, loops, try, include, import."""
import pytest


# --- assignment and places ----------------------------------------------------


def test_assignment_and_reassignment_of_other_type(ok):
    assert ok('x = 1\nx = "s"\nx = [x]\nprint(x)') == '["s"]\n'


@pytest.mark.parametrize(
    "code,out",
    [
        ("x = 5\nx += 2\nprint(x)", "7"),
        ("x = 5\nx -= 2\nprint(x)", "3"),
        ("x = 5\nx *= 2\nprint(x)", "10"),
        ("x = 5\nx /= 2\nprint(x)", "2.5"),
        ("x = -5\nx %= 3\nprint(x)", "1"),
        ('x = "a"\nx ..= 1\nx ..= nil\nprint(x)', "a1nil"),
        ("l = [1, 2]\nl[1] += 10\nprint(l)", "[1,12]"),
        ('m = {"n": {"c": 1}}\nm.n.c *= 6\nm["n"]["c"] -= 1\nprint(m)', '{"n":{"c":5}}'),
        ('m = {"s": "a"}\nm.s ..= "b"\nprint(m.s)', "ab"),
        ("l = [[0, [1]]]\nl[0][1][0] = 7\nprint(l)", "[[0,[7]]]"),
        ('m = {}\nm.a = {}\nm.a.b = []\npush(m.a.b, 1)\nprint(m)', '{"a":{"b":[1]}}'),
        ('l = [{"k": 1}]\nl[0].k = 2\nl[-1]["j"] = 3\nprint(l)', '[{"k":2,"j":3}]'),
        ("i = 0\nl = [5, 6]\nl[i + 1] = 0\nprint(l)", "[5,0]"),
    ],
)
def test_compound_and_place_assignment(ok, code, out):
    assert ok(code) == out + "\n"


@pytest.mark.parametrize(
    "code,kind",
    [
        ("x += 1", "name"),
        ('x = "a"\nx += 1', "type"),
        ("x = 1\nx /= 0", "arith"),
        ("x = 1\nx %= 0", "arith"),
        ("m = {}\nm.a += 1", "key"),
        ("l = []\nl[0] += 1", "index"),
        # q is assigned only on a path not taken (assigned nowhere is a load error)
        ("q.a = 1\nif false\nq = {}\nend", "name"),
        ("q[0] = 1\nif false\nq = []\nend", "name"),
    ],
)
def test_compound_assignment_errors(fails, code, kind):
    fails(code, kind)


def test_assignment_evaluates_right_side_before_failing_place(ok):
    # A failing right-hand side leaves the variable as it was.
    code = """x = 1
try
x = 1 / 0
catch e
end
print(x)"""
    assert ok(code) == "1\n"


@pytest.mark.parametrize(
    "src",
    ["1 + 2", "x", '"str"', "x == 1", "[1, 2]", "(print(1))", "-f()", "not f()", "f() + 1",
     "1 = x", "f() = 1", "x + 1 = 2", 'x = 1 x', "= 1"],
)
def test_only_calls_stand_alone(script, src):
    r = script(f"x = 1\nfn f()\nend\n{src}\n")
    assert r.status == 3, r
    assert r.diag["kind"] == "syntax" and r.diag["line"] == 4


def test_call_statement_discards_result(ok):
    assert ok("fn f()\nprint(\"in f\")\nreturn 5\nend\nf()\nlen([1])") == "in f\n"


# --- if ------------------------------------------------------------------------


@pytest.mark.parametrize("x,out", [(1, "one"), (2, "two"), (3, "three"), (9, "other")])
def test_if_elif_else(ok, x, out):
    code = f"""x = {x}
if x == 1
print("one")
elif x == 2
print("two")
elif x == 3
print("three")
else
print("other")
end"""
    assert ok(code) == out + "\n"


def test_if_without_else(ok):
    assert ok('if false\nprint("no")\nend\nprint("after")') == "after\n"


def test_elif_conditions_evaluated_lazily(ok):
    code = """fn t(n)
print("eval", n)
return n == 2
end
if t(1)
print("A")
elif t(2)
print("B")
elif t(3)
print("C")
end"""
    assert ok(code) == "eval 1\neval 2\nB\n"


@pytest.mark.parametrize(
    "src",
    [
        "if true\nelse\nelse\nend",
        "if true\nelse\nelif true\nend",
        "elif true\nend",
        "else\n",
        "end\n",
        "if true\n",
        "while true\n",
        "for i = 1 to 2\n",
        "fn f()\n",
        "try\ncatch e\n",
        "try\nend",
        "try\nprint(1)\nend",
        "catch e\nend",
        "while true\nelse\nend",
        "for x in []\ncatch e\nend",
        "if true\nend\nend",
    ],
)
def test_block_structure_errors(script, src):
    r = script(src + "\n")
    assert r.status == 3, r
    assert r.diag["kind"] == "structure", r


def test_if_needs_condition(script):
    r = script("if\nend\n")
    assert r.status == 3 and r.diag["kind"] in ("syntax", "structure")


def test_condition_errors_are_runtime(fails):
    fails("if 1 / 0\nend", "arith", line=1)
    fails("while nope\nend\nif false\nnope = 1\nend", "name", line=1)


# --- while -----------------------------------------------------------------------


def test_while_loop(ok):
    assert ok("i = 0\nwhile i < 3\nprint(i)\ni += 1\nend\nprint(\"done\", i)") == "0\n1\n2\ndone 3\n"


def test_break_and_continue(ok):
    code = """i = 0
while true
i += 1
if i % 2 == 0
continue
end
if i > 7
break
end
print(i)
end
print("end", i)"""
    assert ok(code) == "1\n3\n5\n7\nend 9\n"


def test_break_only_innermost_loop(ok):
    code = """for i = 1 to 3
for j = 1 to 3
if j == 2
break
end
print(i, j)
end
end"""
    assert ok(code) == "1 1\n2 1\n3 1\n"


def test_break_inside_try_inside_loop(ok):
    code = """for i = 1 to 5
try
if i == 3
break
end
print(i)
catch e
end
end
print("after")"""
    assert ok(code) == "1\n2\nafter\n"


@pytest.mark.parametrize(
    "src",
    [
        "break",
        "continue",
        "if true\nbreak\nend",
        "fn f()\nbreak\nend",
        "while true\nfn g()\nend\nend",
        "for i = 1 to 2\nend\ncontinue",
        "try\nbreak\ncatch e\nend",
    ],
)
def test_break_continue_placement_is_structure_error(script, src):
    r = script(src + "\n")
    assert r.status == 3 and r.diag["kind"] == "structure", r


def test_break_in_function_called_from_loop_is_structure_error(script):
    r = script("fn f()\nbreak\nend\nwhile true\nf()\nend\n")
    assert r.status == 3 and r.diag["kind"] == "structure" and r.diag["line"] == 2


# --- for range ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "header,out",
    [
        ("i = 1 to 3", "1,2,3|3"),
        ("i = 0 to 0", "0|0"),
        ("i = 3 to 1", "|7"),
        ("i = 1 to 10 step 3", "1,4,7,10|10"),
        ("i = 1 to 9 step 3", "1,4,7|7"),
        ("i = 5 to 1 step -2", "5,3,1|1"),
        ("i = 5 to 0 step -2", "5,3,1|1"),
        ("i = 1 to 5 step -1", "|7"),
        ("i = 0 to 1 step 0.25", "0,0.25,0.5,0.75,1|1"),
        ("i = -2 to 2", "-2,-1,0,1,2|2"),
        ("i = 0.5 to 2", "0.5,1.5|1.5"),
        ("i = 1 to 1 step 5", "1|1"),
    ],
)
def test_for_range(ok, header, out):
    code = f"""i = 7
acc = []
for {header}
push(acc, i)
end
print(join(acc, ",") .. "|" .. i)"""
    assert ok(code) == out + "\n"


def test_for_range_uses_start_plus_k_times_step(ok):
    # Accumulating 0.1 ten times gives 0.9999999999999999; start + 10 * 0.1 is 1.
    assert ok("n = 0\nfor x = 0 to 1 step 0.1\nn += 1\nend\nprint(n, x)") == "11 1\n"


def test_for_range_bounds_evaluated_once(ok):
    code = """fn b(v)
print("eval", v)
return v
end
n = 3
for i = b(1) to b(n) step b(1)
n = 10
end
print(i)"""
    assert ok(code) == "eval 1\neval 3\neval 1\n3\n"


def test_for_range_variable_assignment_does_not_change_iteration(ok):
    assert ok("for i = 1 to 3\nprint(i)\ni = 100\nend\nprint(i)") == "1\n2\n3\n100\n"


def test_for_range_continue_and_break(ok):
    code = """for i = 1 to 10
if i % 2 == 1
continue
end
if i > 6
break
end
print(i)
end
print(i)"""
    assert ok(code) == "2\n4\n6\n8\n"


@pytest.mark.parametrize(
    "header,kind",
    [
        ("i = 1 to 5 step 0", "value"),
        ('i = "a" to 5', "type"),
        ("i = 1 to nil", "type"),
        ('i = 1 to 5 step "1"', "type"),
        ("i = [] to 5", "type"),
        ("i = 1 to 5 step 0.0", "value"),
    ],
)
def test_for_range_errors(fails, header, kind):
    fails(f"x = 0\nfor {header}\nend", kind, line=2)


# --- for in ------------------------------------------------------------------------


def test_for_in_list(ok):
    assert ok('for x in [1, "a", nil]\nprint(x)\nend\nprint(x)') == "1\na\nnil\nnil\n"


def test_for_in_map_keys_in_order(ok):
    assert ok('m = {"b": 1, "a": 2, "c": 3}\nfor k in m\nprint(k)\nend') == "b\na\nc\n"


def test_for_two_names_list(ok):
    assert ok('for i, v in ["x", "y"]\nprint(i, v)\nend') == "0 x\n1 y\n"


def test_for_two_names_map(ok):
    assert ok('for k, v in {"b": [1], "a": nil}\nprint(k, v)\nend') == "b [1]\na nil\n"


def test_for_in_empty(ok):
    assert ok('for x in []\nprint("no")\nend\nfor k, v in {}\nprint("no")\nend\nprint("ok")') == "ok\n"


def test_for_in_nested_and_break(ok):
    code = """for a in [1, 2]
for b in ["x", "y", "z"]
if b == "z"
break
end
print(a .. b)
end
end"""
    assert ok(code) == "1x\n1y\n2x\n2y\n"


@pytest.mark.parametrize("coll", ["5", "nil", "true", '"abc"'])
def test_for_in_needs_list_or_map(fails, coll):
    fails(f"x = 1\nfor v in {coll}\nend", "type", line=2)


@pytest.mark.parametrize(
    "src",
    ["for i = 1\nend", "for i 1 to 2\nend", "for in [1]\nend", "for 1 in [1]\nend", "for a, b, c in [1]\nend",
     "for i = 1 to\nend", "for i = 1 to 2 step\nend", "for a.b in [1]\nend"],
)
def test_for_header_syntax(script, src):
    r = script(src + "\n")
    assert r.status == 3 and r.diag["kind"] == "syntax", r


# --- try / throw ----------------------------------------------------------------------


def test_try_without_error_skips_catch(ok):
    assert ok('try\nprint("body")\ncatch e\nprint("catch")\nend\nprint("after")') == "body\nafter\n"


def test_try_catch_runtime_error(ok):
    code = """try
print("before")
x = [1][5]
print("not reached")
catch e
print(e.kind, e.line)
end
print("after")"""
    assert ok(code) == "before\nindex 3\nafter\n"


def test_throw_values(ok):
    code = """for v in ["text", 42, nil, [1, 2], {"code": 7}, true]
try
throw v
catch e
print(e.kind, e.message, e.value == v, type(e.value))
end
end"""
    assert ok(code) == (
        "user text true string\n"
        "user 42 true number\n"
        "user nil true nil\n"
        "user [1,2] true list\n"
        'user {"code":7} true map\n'
        "user true true bool\n"
    )


def test_nested_try_and_rethrow(ok):
    code = """try
try
throw "inner"
catch e
print("caught", e.message)
throw e.message .. "!"
end
catch outer
print("outer", outer.value)
end"""
    assert ok(code) == "caught inner\nouter inner!\n"


def test_error_in_catch_propagates(fails):
    r = fails("try\nthrow 1\ncatch e\nx = 1 / 0\nend", "arith", line=4)


def test_catch_name_binding_survives(ok):
    assert ok("try\nthrow 5\ncatch err\nend\nprint(err.value)") == "5\n"


def test_throw_from_function_caught_by_caller(ok):
    code = """fn f(n)
if n == 0
throw {"why": "zero"}
end
return f(n - 1)
end
try
f(3)
catch e
print(e.value.why, e.line)
end"""
    assert ok(code) == "zero 3\n"


def test_uncaught_throw(fails):
    r = fails('x = 1\nthrow "bad thing"', "user", line=2)
    assert r.diag["message"] == "bad thing"


# --- include and import -------------------------------------------------------------


def test_include_runs_where_it_stands(tmp_path, script):
    (tmp_path / "lib.lsh").write_text('print("lib top")\nfn helper(x)\nreturn x * 2\nend\nlibvar = 5\n')
    r = script('print("before")\ninclude "lib.lsh"\nprint(helper(libvar))\n')
    assert (r.status, r.out) == (0, "before\nlib top\n10\n"), r


def test_included_functions_are_hoisted(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("fn twice(x)\nreturn x * 2\nend\n")
    r = script('print(twice(4))\ninclude "lib.lsh"\n')
    assert (r.status, r.out) == (0, "8\n"), r


def test_include_path_relative_to_including_file(tmp_path, script):
    sub = tmp_path / "sub"
    (sub / "deeper").mkdir(parents=True)
    (sub / "a.lsh").write_text('include "deeper/b.lsh"\nprint("a")\n')
    (sub / "deeper" / "b.lsh").write_text('include "../c.lsh"\nprint("b")\n')
    (sub / "c.lsh").write_text('print("c")\n')
    r = script('include "sub/a.lsh"\nprint("main")\n', cwd="/")
    assert (r.status, r.out) == (0, "c\nb\na\nmain\n"), r


def test_include_once_per_canonical_path(tmp_path, script):
    (tmp_path / "d").mkdir()
    (tmp_path / "once.lsh").write_text('print("loaded")\n')
    r = script('include "once.lsh"\ninclude "./once.lsh"\ninclude "d/../once.lsh"\nprint("end")\n')
    assert (r.status, r.out) == (0, "loaded\nend\n"), r


def test_include_through_symlink_is_same_file(tmp_path, script):
    (tmp_path / "real.lsh").write_text('print("loaded")\n')
    (tmp_path / "link.lsh").symlink_to(tmp_path / "real.lsh")
    r = script('include "real.lsh"\ninclude "link.lsh"\n')
    assert (r.status, r.out) == (0, "loaded\n"), r


def test_include_cycle_is_load_error(tmp_path, script):
    (tmp_path / "a.lsh").write_text('include "b.lsh"\n')
    (tmp_path / "b.lsh").write_text('include "a.lsh"\n')
    r = script('print("x")\ninclude "a.lsh"\n')
    assert r.status == 3 and r.diag["kind"] == "include", r
    assert r.out == ""


def test_include_of_self_is_cycle(script):
    r = script('include "t.lsh"\nprint(1)\n')
    assert r.status == 3 and r.diag["kind"] == "include", r


def test_include_missing_file(script):
    r = script('x = 1\ninclude "nope.lsh"\n')
    assert r.status == 3 and r.diag["kind"] == "include" and r.diag["line"] == 2, r
    assert r.diag["file"].endswith("t.lsh")


@pytest.mark.parametrize(
    "src",
    [
        'if true\ninclude "lib.lsh"\nend',
        'fn f()\ninclude "lib.lsh"\nend',
        'while false\ninclude "lib.lsh"\nend',
        'try\ninclude "lib.lsh"\ncatch e\nend',
        "if true\nimport cgi\nend",
        "fn f()\nimport cgi\nend",
    ],
)
def test_include_import_not_at_top_level(tmp_path, script, src):
    (tmp_path / "lib.lsh").write_text("x = 1\n")
    r = script(src + "\n")
    assert r.status == 3 and r.diag["kind"] == "structure", r


def test_include_errors_report_included_file(tmp_path, script):
    (tmp_path / "bad.lsh").write_text("x = 1\ny = (2\n")
    r = script('include "bad.lsh"\n')
    assert r.status == 3 and r.diag["kind"] == "syntax", r
    assert r.diag["file"].endswith("bad.lsh") and r.diag["line"] == 2


def test_runtime_error_in_included_file_names_it(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("fn f()\n\nreturn 1 / 0\nend\n")
    r = script('include "lib.lsh"\nf()\n')
    assert r.status == 1 and r.diag["file"].endswith("lib.lsh") and r.diag["line"] == 3, r


def test_include_needs_no_allow_files(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("v = 1\n")
    r = script('include "lib.lsh"\nprint(v)\n')
    assert (r.status, r.out) == (0, "1\n")


def test_include_needs_string_literal(script):
    r = script("p = \"x.lsh\"\ninclude p\n")
    assert r.status == 3 and r.diag["error"] == "load"


def test_import_unknown_module(script):
    r = script("import no_such_module_here\n")
    assert r.status == 3 and r.diag["error"] == "load"


def test_duplicate_function_across_include(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("fn f()\nend\n")
    r = script('include "lib.lsh"\nfn f()\nend\n')
    assert r.status == 3 and r.diag["kind"] == "name", r


def test_diamond_include_runs_shared_file_once(tmp_path, script):
    (tmp_path / "shared.lsh").write_text('print("shared")\n')
    (tmp_path / "a.lsh").write_text('include "shared.lsh"\nprint("a")\n')
    (tmp_path / "b.lsh").write_text('include "shared.lsh"\nprint("b")\n')
    r = script('include "a.lsh"\ninclude "b.lsh"\nprint("main")\n')
    assert (r.status, r.out) == (0, "shared\na\nb\nmain\n"), r


def test_for_two_names_iterates_snapshot(ok):
    code = """m = {"a": 1, "b": 2}
for k, v in m
m.a = 100
m.b = 200
print(k, v)
end
l = [1, 2]
for i, v in l
l[1] = 99
print(i, v)
end
print(m, l)"""
    assert ok(code) == 'a 1\nb 2\n0 1\n1 2\n{"a":100,"b":200} [1,99]\n'


def test_error_lines_of_headers(fails):
    fails("if false\nx = 1\nelif 1 / 0\nend", "arith", line=3)
    fails("for i = 1 to 2\nend\nfor x in nope_var\nend\nif false\nnope_var = 1\nend", "name", line=3)
    fails("i = 0\nwhile i < 2\ni += 1\nend\nwhile i / 0\nend", "arith", line=5)


def test_place_assignment_evaluates_value_before_keys(ok):
    # docs/LANGUAGE.md: the right-hand side is evaluated first, then the place's keys.
    code = """fn t(x)
write(x, " ")
return x
end
m = {}
m[t("k")] = t("v")
l = [0, 0]
l[t(1)] += t(5)
print()
print(m, l)"""
    assert ok(code) == 'v k 5 1 \n{"k":"v"} [0,5]\n'
