"""Function arguments (SPEC 10): a bare name of a user function at a builtin's function
parameter, resolved and arity-checked at load; each call an ordinary call (call depth,
steps, work); `sort` with a comparator, `sort_by` with a key function, `map`, `filter`,
`reduce`, `any`, `all`, `count`, `group_by`, `re.replace` with a function."""
import json

from conftest import lines_of, run


# ---------------------------------------------------------------------------
# Results of each builtin
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Errors and limits inside function arguments
# ---------------------------------------------------------------------------


def test_callback_recursion_hits_call_depth(fails):
    code = lines_of("fn deep(x)", "  return map([x], deep)", "end", "deep(1)")
    r = fails(code, "call_depth", status=4, opts=["--stats"])
    assert r.stats["max_call_depth"] == 64


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


# ---------------------------------------------------------------------------
# Load errors: arity, unknown names, not a function
# ---------------------------------------------------------------------------


def test_wrong_arity_text_diagnostic_has_help(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text(lines_of("fn two(a, b)", "  return a", "end", "print(map([1], two))"))
    r = run([p])
    assert r.status == 3, r
    assert "arity" in r.err and "two" in r.err
    assert "help:" in r.err and "passes 1 argument" in r.err
    assert "^^^" in r.err


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
