"""Function arguments (SPEC 10): a bare name of a user function at a builtin's function
parameter, resolved and arity-checked at load; each call an ordinary call (call depth,
steps, work); `sort` with a comparator, `sort_by` with a key function, `map`, `filter`,
`reduce`, `any`, `all`, `count`, `group_by`, `re.replace` with a function."""
import json

from conftest import lines_of, run


# ---------------------------------------------------------------------------
# Results of each builtin
# ---------------------------------------------------------------------------


def test_sort_with_comparator_descending(ok):
    code = lines_of("fn desc(a, b)", "  return a > b", "end", "print(sort([3, 1, 4, 1, 5, 9, 2, 6], desc))")
    assert ok(code) == "[9,6,5,4,3,2,1,1]\n"


def test_sort_with_comparator_is_stable(ok):
    # Equal keys keep their input order, whatever the list's length (several merge passes).
    code = lines_of(
        "fn by_k(a, b)",
        "  return a.k < b.k",
        "end",
        "xs = []",
        "for i = 0 to 99",
        "  push(xs, {k: i % 3, i: i})",
        "end",
        "ys = sort(xs, by_k)",
        "ok = true",
        "for j = 1 to len(ys) - 1",
        "  a = ys[j - 1]",
        "  b = ys[j]",
        "  if a.k > b.k or (a.k == b.k and a.i > b.i)",
        "    ok = false",
        "  end",
        "end",
        "print(ok, len(ys), ys[0], ys[99])",
    )
    assert ok(code) == 'true 100 {"k":0,"i":0} {"k":2,"i":98}\n'


def test_sort_comparator_result_is_truthiness(ok):
    code = lines_of(
        "fn cmp(a, b)",
        "  if a < b",
        "    return 1",
        "  end",
        '  return ""',
        "end",
        'print(sort(["pear", "apple", "fig"], cmp))',
    )
    assert ok(code) == '["apple","fig","pear"]\n'


def test_sort_without_function_is_unchanged(ok):
    assert ok('print(sort([3, 1, 2]), sort(["b", "a"]))') == '[1,2,3] ["a","b"]\n'


def test_sort_comparator_gets_copies(ok):
    # The comparator changes its own copies; the list being sorted is not touched.
    code = lines_of(
        "fn cmp(a, b)",
        "  push(a, 0)",
        "  return a[0] < b[0]",
        "end",
        "xs = [[2], [1]]",
        "print(sort(xs, cmp), xs)",
    )
    assert ok(code) == "[[1],[2]] [[2],[1]]\n"


def test_sort_by_key_string_and_key_function(ok):
    code = lines_of(
        "fn neg_age(p)",
        "  return -p.age",
        "end",
        "fn name_len(p)",
        "  return len(p.name)",
        "end",
        'people = [{name: "ann", age: 30}, {name: "bo", age: 25}, {name: "cyd", age: 35}]',
        'key = "age"',
        "print(json.stringify(sort_by(people, key)))",
        'print(json.stringify(sort_by(people, "name")))',
        "print(json.stringify(sort_by(people, neg_age)))",
        # Stable: ann and cyd both have length 3 and keep their order.
        "print(json.stringify(sort_by(people, name_len)))",
        # A key function works on any items, not only maps.
        "fn last(s)",
        "  return s[-1]",
        "end",
        'print(sort_by(["xb", "ya", "zc"], last))',
    )
    out = ok(code).splitlines()
    ages = lambda line: [p["age"] for p in json.loads(line)]
    assert ages(out[0]) == [25, 30, 35]
    assert [p["name"] for p in json.loads(out[1])] == ["ann", "bo", "cyd"]
    assert ages(out[2]) == [35, 30, 25]
    assert [p["name"] for p in json.loads(out[3])] == ["bo", "ann", "cyd"]
    assert out[4] == '["ya","xb","zc"]'


def test_sort_by_key_function_mixed_keys_is_type_error(ok):
    code = lines_of(
        "fn k(x)",
        "  return x",
        "end",
        "try",
        '  sort_by([1, "a"], k)',
        "catch e",
        "  print(e.kind)",
        "end",
    )
    assert ok(code) == "type\n"


def test_map_filter_reduce_count(ok):
    code = lines_of(
        "fn sq(x)",
        "  return x * x",
        "end",
        "fn odd(x)",
        "  return x % 2",
        "end",
        "fn add(acc, x)",
        "  return acc + x",
        "end",
        "fn collect(acc, x)",
        "  push(acc, x * 10)",
        "  return acc",
        "end",
        "xs = [1, 2, 3, 4, 5]",
        "print(map(xs, sq), filter(xs, odd), reduce(xs, add, 100), count(xs, odd))",
        "print(reduce(xs, collect, []), reduce([], add, 7), map([], sq), xs)",
    )
    assert ok(code) == "[1,4,9,16,25] [1,3,5] 115 3\n[10,20,30,40,50] 7 [] [1,2,3,4,5]\n"


def test_any_all_short_circuit(ok):
    code = lines_of(
        "calls = 0",
        "fn big(x)",
        "  global calls",
        "  calls += 1",
        "  return x > 2",
        "end",
        "print(any([1, 3, 5, 7], big), calls)",
        "calls = 0",
        "print(all([3, 1, 5, 7], big), calls)",
        "calls = 0",
        "print(all([3, 4], big), any([1, 2], big), calls)",
        "print(any([], big), all([], big))",
    )
    assert ok(code) == "true 2\nfalse 2\ntrue false 4\nfalse true\n"


def test_group_by_first_seen_order(ok):
    code = lines_of(
        "fn parity(x)",
        "  return x % 2",
        "end",
        "fn first(s)",
        "  return s[0]",
        "end",
        "print(group_by([4, 3, 1, 2, 5], parity))",
        'print(group_by(["bob", "al", "bea", "cy", "ann"], first))',
        "print(group_by([], parity))",
    )
    assert ok(code) == '{"0":[4,2],"1":[3,1,5]}\n{"b":["bob","bea"],"a":["al","ann"],"c":["cy"]}\n{}\n'


def test_re_replace_with_function_camel_to_snake(ok):
    code = lines_of(
        "fn snake(g)",
        '  return "_" .. lower(g[0])',
        "end",
        'print(re.replace("[A-Z]", "camelCaseNameX", snake))',
    )
    assert ok(code) == "camel_case_name_x\n"


def test_re_replace_function_gets_groups_as_re_match(ok):
    code = lines_of(
        "fn show(g)",
        "  return json.stringify(g)",
        "end",
        "fn dollar(g)",
        '  return "$1"',
        "end",
        'print(re.replace("(a)|(b)", "xaby", show))',
        'print(json.stringify(re.match("(a)|(b)", "b")))',
        'print(re.replace("(a)", "cat", dollar))',
        # A string replacement still interprets $1.
        'print(re.replace("(a)", "cat", "<$1>"))',
    )
    assert ok(code) == 'x["a","a",null]["b",null,"b"]y\n["b",null,"b"]\nc$1t\nc<a>t\n'


def test_re_replace_function_must_return_string(ok):
    code = lines_of(
        "fn n(g)",
        "  return 1",
        "end",
        "try",
        '  re.replace("a", "aa", n)',
        "catch e",
        "  print(e.kind, e.message)",
        "end",
    )
    assert ok(code) == "type re.replace: the function must return a string, got number\n"


def test_value_or_function_position_takes_variables(ok):
    # At re.replace's third argument a variable is a value (no function has its name).
    code = lines_of('w = "-"', 'print(re.replace("a", "banana", w))')
    assert ok(code) == "b-n-n-\n"


# ---------------------------------------------------------------------------
# Errors and limits inside function arguments
# ---------------------------------------------------------------------------


def test_comparator_that_throws_is_caught_around_sort(ok):
    code = lines_of(
        "fn bad(a, b)",
        '  throw {why: "boom"}',
        "end",
        "try",
        "  sort([2, 1], bad)",
        "catch e",
        "  print(e.kind, e.message, e.line, e.value.why)",
        "end",
        "fn typed(a, b)",
        '  return a < "x"',
        "end",
        "try",
        "  sort([2, 1], typed)",
        "catch e",
        "  print(e.kind, e.line)",
        "end",
    )
    assert ok(code) == 'user {"why":"boom"} 2 boom\ntype 10\n'


def test_uncaught_callback_error_names_its_line(fails):
    code = lines_of("fn f(x)", "  return x / 0", "end", "print(map([1], f))")
    r = fails(code, "arith", line=2)
    assert r.diag["column"] == 12


def test_callback_recursion_hits_call_depth(fails):
    code = lines_of("fn deep(x)", "  return map([x], deep)", "end", "deep(1)")
    r = fails(code, "call_depth", status=4, opts=["--stats"])
    assert r.stats["max_call_depth"] == 64


def test_callback_recursion_is_not_catchable(fails):
    code = lines_of(
        "fn deep(a, b)",
        "  return sort([a, b], deep)",
        "end",
        "try",
        "  deep(1, 2)",
        "catch e",
        '  print("caught")',
        "end",
    )
    r = fails(code, "call_depth", status=4)
    assert "caught" not in r.out


def test_callback_steps_are_exact(script):
    # Main: 2 lines; each of the 3 calls runs 2 lines of `inc`: 8 steps in all.
    code = lines_of("fn inc(x)", "  y = x + 1", "  return y", "end", "ys = map([1, 2, 3], inc)", "print(ys)")
    r = script(code, opts=["--stats"])
    assert r.status == 0, r
    assert r.out == "[2,3,4]\n"
    assert r.stats["steps"] == 8
    assert script(code, opts=["--max-steps", "8"]).status == 0
    r = script(code, opts=["--max-steps", "7"])
    assert r.status == 4 and r.diag["kind"] == "steps", r
    assert r.out == ""


def test_comparator_steps_are_counted(script):
    # A 2-item sort asks once; main has 1 line.
    code = lines_of("fn lt(a, b)", "  return a < b", "end", "ys = sort([2, 1], lt)")
    r = script(code, opts=["--stats"])
    assert r.status == 0 and r.stats["steps"] == 2, r


def test_callback_under_max_work(fails, script):
    code = lines_of("fn f(x)", "  return x", "end", "n = count(range(10000), f)", "print(n)")
    r = script(code, opts=["--stats"])
    assert r.status == 0 and r.out == "9999\n", r
    used = r.stats["work"]
    # Every call costs work even when its body is empty (no step at all).
    assert used >= 10000 * 20
    fails(code, "work", status=4, opts=["--max-work", str(used // 2)])
    empty = lines_of("fn f(x)", "end", "n = count(range(10000), f)")
    r = script(empty, opts=["--stats"])
    assert r.status == 0 and r.stats["steps"] == 1 and r.stats["work"] >= 200000, r
    fails(empty, "work", status=4, opts=["--max-work", "100000"])


def test_callback_results_bounded_by_frame_storage(fails):
    code = lines_of("fn big(x)", '  return repeat("a", 100000)', "end", "ys = map(range(1000), big)")
    fails(code, "frame_storage", status=4)


def test_inconsistent_comparator_ends_with_a_permutation(script):
    code = lines_of(
        "fn coin(a, b)",
        "  return rand.int(0, 1) == 1",
        "end",
        "xs = range(1000)",
        "ys = sort(xs, coin)",
        "print(json.stringify(ys))",
    )
    r = script(code, opts=["--seed", "7", "--stats"])
    assert r.status == 0, r
    ys = json.loads(r.out)
    assert sorted(ys) == list(range(1000))
    assert ys != list(range(1000))
    # At most n * ceil(log2 n) questions, one line each, plus main's 3.
    assert r.stats["steps"] <= 1000 * 10 + 3
    again = script(code, opts=["--seed", "7"])
    assert again.out == r.out


def test_sort_16384_items_with_comparator(script):
    code = lines_of(
        "fn lt(a, b)",
        "  return a < b",
        "end",
        "xs = reverse(range(16384))",
        "ys = sort(xs, lt)",
        "print(ys == range(16384), len(ys))",
    )
    r = script(code, opts=["--stats"])
    assert r.status == 0, r
    assert r.out == "true 16384\n"
    assert r.stats["steps"] <= 16384 * 14 + 3


# ---------------------------------------------------------------------------
# Load errors: arity, unknown names, not a function
# ---------------------------------------------------------------------------


def test_function_argument_of_wrong_arity(script):
    code = lines_of("fn one(a)", "  return a", "end", "print(sort([1], one))")
    r = script(code)
    assert r.status == 3, r
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("load", "arity", 4), d
    assert d["column"] == "print(sort([1], one))".index("one") + 1
    assert "`one` takes 1 argument, but `sort` calls it with 2" in d["message"]


def test_wrong_arity_text_diagnostic_has_help(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text(lines_of("fn two(a, b)", "  return a", "end", "print(map([1], two))"))
    r = run([p])
    assert r.status == 3, r
    assert "arity" in r.err and "two" in r.err
    assert "help:" in r.err and "passes 1 argument" in r.err
    assert "^^^" in r.err


def test_unknown_function_name(script):
    code = lines_of("fn double(x)", "  return x * 2", "end", "print(map([1], doubel))")
    r = script(code)
    assert r.status == 3, r
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("load", "name", 4), d
    assert d["column"] == "print(map([1], doubel))".index("doubel") + 1
    assert "did you mean `double`?" in r.err or "double" in json.dumps(d)


def test_variable_where_function_expected(script):
    code = lines_of("f = 1", "print(filter([1], f))")
    r = script(code)
    assert r.status == 3 and r.diag["kind"] == "name" and r.diag["line"] == 2, r
    # A builtin's name is not a user function either.
    r = script(lines_of("print(map([[1]], len))"))
    assert r.status == 3 and r.diag["kind"] == "name", r


def test_other_expressions_where_function_expected(script):
    for arg in ['"f"', "f()", "[f]", "nil"]:
        code = lines_of("fn f(x)", "  return x", "end", f"print(map([1], {arg}))")
        r = script(code)
        assert r.status == 3 and r.diag["error"] == "load", (arg, r)
        assert r.diag["line"] == 4, (arg, r)


def test_function_name_is_not_a_read_variable(script):
    # `cmp` is assigned nowhere: at a function parameter it is the function, not a
    # variable that is read but never assigned (SPEC 7).
    code = lines_of("fn cmp(a, b)", "  return a > b", "end", "print(sort([1, 2], cmp))")
    r = script(code)
    assert r.status == 0 and r.out == "[2,1]\n", r


def test_errors_in_unreachable_functions_found_before_main(script):
    code = lines_of('print("never")', "fn never()", "  return any([1], nothing)", "end")
    r = script(code)
    assert r.status == 3 and r.out == "" and r.diag["kind"] == "name" and r.diag["line"] == 3, r


def test_function_named_like_new_builtin_is_refused(script):
    r = script(lines_of("fn map(x)", "  return x", "end"))
    assert r.status == 3 and r.diag["kind"] == "name", r


def test_check_reports_function_argument_errors(tmp_path):
    p = tmp_path / "bad.lsh"
    p.write_text(
        lines_of("fn one(a)", "  return a", "end", "xs = sort([1], one)", "ys = map([1], none_such)")
    )
    r = run(["check", "--error-format", "json", p])
    assert r.status == 3, r
    kinds = [(d["kind"], d["line"]) for d in r.diags]
    assert kinds == [("arity", 4), ("name", 5)], r
    assert all("column" in d for d in r.diags)
    r = run(["check", p])
    assert r.status == 3 and "help:" in r.err, r
    good = tmp_path / "good.lsh"
    good.write_text(lines_of("fn one(a)", "  return a", "end", "xs = map([1], one)"))
    r = run(["check", good])
    assert r.status == 0 and "capabilities: none" in r.out, r


def test_builtins_listing_shows_function_parameters():
    r = run(["--builtins"])
    assert r.status == 0
    rows = {line.split("\t")[0]: line for line in r.out.splitlines()}
    assert "sort(list[, FN(a, b)])" in rows["sort"]
    for name in ["map", "filter", "reduce", "any", "all", "count", "group_by"]:
        assert "FN(" in rows[name], rows[name]
    assert "FN(groups)" in rows["re.replace"]


def test_profile_attributes_callbacks(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text(lines_of("fn lt(a, b)", "  return a < b", "end", "ys = sort([3, 2, 1], lt)"))
    prof = tmp_path / "prof.txt"
    r = run(["--profile", prof, p])
    assert r.status == 0, r
    text = prof.read_text()
    assert "main;lt " in text, text
