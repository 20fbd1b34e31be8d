"""`leash test` (SPEC 11): test files, test functions, snapshots of globals, fresh step
budgets, --filter, assert_snapshot and --update-snapshots, exit statuses."""
import json

from conftest import run

SUITE = '''base = 10
fn add(a, b)
  return a + b
end
fn test_add()
  assert_eq(add(2, 3), 5)
end
fn test_changes_a_global()
  global base
  base += 1
  assert_eq(base, 11)
end
fn test_sees_the_snapshot_again()
  assert_eq(base, 10)
end
fn helper()
end
'''


def write(tmp_path, name, text):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_runs_test_functions_in_source_order(tmp_path):
    write(tmp_path, "math_test.lsh", SUITE)
    r = run(["test"], cwd=tmp_path)
    assert r.status == 0, r
    assert r.out.splitlines() == [
        "ok math_test.lsh test_add",
        "ok math_test.lsh test_changes_a_global",
        "ok math_test.lsh test_sees_the_snapshot_again",
        "3 passed, 0 failed",
    ]


def test_failures_exit_1_and_name_the_message(tmp_path):
    write(tmp_path, "a_test.lsh", 'fn test_bad()\n  assert_eq(1 + 1, 3, "sum")\nend\nfn test_boom()\n  x = 1 / 0\nend\n')
    r = run(["test", "--error-format", "json"], cwd=tmp_path)
    assert r.status == 1, r
    # Round 3 (SPEC 11): each failure says where it happened.
    assert r.out.splitlines() == [
        "FAIL a_test.lsh test_bad: sum: expected 3, got 2",
        "  at a_test.lsh:2",
        "FAIL a_test.lsh test_boom: division by zero",
        "  at a_test.lsh:5",
        "0 passed, 2 failed",
    ]
    # --error-format json asked for diagnostics: stderr has one per failure, for tools.
    assert [(d["kind"], d["line"]) for d in r.diags] == [("assert", 2), ("arith", 5)]
    # In text each failure is written once, on stdout (no second copy on stderr).
    r = run(["test"], cwd=tmp_path)
    assert "division by zero" in r.out and r.err == "", r
    r = run(["test", "--format", "json"], cwd=tmp_path)
    rows = [json.loads(line) for line in r.out.splitlines()][:-1]  # the last: the summary
    assert [(o["name"], o["failure_file"], o["line"]) for o in rows] == [
        ("test_bad", "a_test.lsh", 2),
        ("test_boom", "a_test.lsh", 5),
    ]


def test_each_test_has_a_fresh_step_budget(tmp_path):
    body = "fn test_NAME()\n  i = 0\n  while i < 40\n    i += 1\n  end\nend\n"
    write(tmp_path, "s_test.lsh", body.replace("NAME", "one") + body.replace("NAME", "two"))
    # Each test takes 1 + 41 + 40 = 82 steps (assignment, while conditions, body); a
    # budget of 82 passes each of them, so the budget is not shared.
    r = run(["test", "--max-steps", "82"], cwd=tmp_path)
    assert (r.status, r.out.splitlines()[-1]) == (0, "2 passed, 0 failed"), r
    r = run(["test", "--max-steps", "81"], cwd=tmp_path)
    assert r.status == 1, r
    assert r.out.splitlines()[0] == "FAIL s_test.lsh test_one: step limit of 81 reached"


def test_filter_and_explicit_files(tmp_path):
    write(tmp_path, "math_test.lsh", SUITE)
    write(tmp_path, "sub/checks.lsh", "fn test_named_file()\nend\n")
    r = run(["test", "--filter", "global"], cwd=tmp_path)
    assert r.out.splitlines() == ["ok math_test.lsh test_changes_a_global", "1 passed, 0 failed"], r
    # A file given by name runs whatever its name; directories find *_test.lsh only.
    r = run(["test", "sub/checks.lsh"], cwd=tmp_path)
    assert r.out.splitlines() == ["ok sub/checks.lsh test_named_file", "1 passed, 0 failed"], r
    r = run(["test", "sub"], cwd=tmp_path)
    assert (r.status, r.out) == (0, "0 passed, 0 failed\n"), r


def test_load_error_exits_3(tmp_path):
    write(tmp_path, "ok_test.lsh", "fn test_fine()\nend\n")
    write(tmp_path, "x_test.lsh", "fn test_x()\n  nope()\nend\n")
    r = run(["test", "--error-format", "json"], cwd=tmp_path)
    assert r.status == 3, r
    assert (r.diag["error"], r.diag["kind"], r.diag["line"]) == ("load", "name", 2)
    assert "ok ok_test.lsh test_fine" in r.out
    # The file that does not load counts as one failed test (SPEC 11).
    assert "FAIL x_test.lsh: load error [name]: unknown function `nope`" in r.out, r
    assert r.out.splitlines()[-1] == "1 passed, 1 failed", r


def test_top_level_failure_fails_the_file(tmp_path):
    write(tmp_path, "t_test.lsh", "x = 1 / 0\nfn test_never()\nend\n")
    r = run(["test"], cwd=tmp_path)
    assert r.status == 1, r
    assert r.out.splitlines()[0].startswith("FAIL t_test.lsh: ") and "division by zero" in r.out
    assert "test_never" not in r.out
    assert r.out.splitlines()[-1] == "0 passed, 1 failed", r


def test_snapshots(tmp_path):
    write(tmp_path, "snap_test.lsh", 'fn test_snap()\n  assert_snapshot("greeting", {"hi": [1, 2]})\nend\n')
    r = run(["test"], cwd=tmp_path)
    assert r.status == 1 and "snapshot greeting is missing" in r.out, r
    r = run(["test", "--update-snapshots"], cwd=tmp_path)
    assert (r.status, r.out) == (0, "ok snap_test.lsh test_snap\n1 passed, 0 failed\n"), r
    snap = tmp_path / "__snapshots__" / "snap_test" / "greeting.snap"
    assert snap.read_text() == '{"hi":[1,2]}'
    r = run(["test"], cwd=tmp_path)
    assert r.status == 0, r
    snap.write_text("something else")
    r = run(["test"], cwd=tmp_path)
    assert r.status == 1 and "snapshot greeting differs" in r.out, r
    # A unified diff of expected and actual (SPEC 11).
    assert "--- expected\n+++ actual\n@@ -1,1 +1,1 @@\n-something else\n+{\"hi\":[1,2]}" in r.out, r.out


def test_snapshot_names_are_checked(tmp_path):
    write(tmp_path, "n_test.lsh", 'fn test_bad_name()\n  assert_snapshot("../escape", 1)\nend\n')
    r = run(["test", "--update-snapshots", "--error-format", "json"], cwd=tmp_path)
    assert r.status == 1 and r.diag["kind"] == "value", r
    assert not (tmp_path / "escape.snap").exists()


def test_missing_path_is_a_usage_error(tmp_path):
    r = run(["test", "nowhere"], cwd=tmp_path)
    assert r.status == 2, r


def test_snapshot_diff_has_context_and_changed_lines(tmp_path):
    write(tmp_path, "d_test.lsh", 'fn test_d()\n  assert_snapshot("t", "a\\nb\\nc\\nd\\ne\\nf\\ng\\n")\nend\n')
    (tmp_path / "__snapshots__" / "d_test").mkdir(parents=True)
    (tmp_path / "__snapshots__" / "d_test" / "t.snap").write_text("a\nb\nc\nX\ne\nf\ng\n")
    r = run(["test"], cwd=tmp_path)
    assert r.status == 1, r
    assert "--- expected\n+++ actual\n@@ -1,7 +1,7 @@\n a\n b\n c\n-X\n+d\n e\n f\n g" in r.out, r.out


def test_format_json_one_object_per_test(tmp_path):
    write(tmp_path, "a_test.lsh", 'fn test_ok()\n  x = 1\nend\nfn test_bad()\n  assert(false, "no")\nend\n')
    write(tmp_path, "b_test.lsh", "fn test_x()\n  nope()\nend\n")
    r = run(["test", "--format", "json"], cwd=tmp_path)
    assert r.status == 3, r
    objs = [json.loads(line) for line in r.out.splitlines()]
    ok, bad, load, summary = objs
    assert (ok["file"], ok["name"], ok["outcome"], ok["message"]) == ("a_test.lsh", "test_ok", "ok", None)
    assert ok["steps"] == 1 and ok["work"] >= 0 and ok["ms"] >= 0, ok
    assert (bad["name"], bad["outcome"], bad["message"]) == ("test_bad", "fail", "no")
    # Round 3: a failure also names its file and line.
    assert set(bad) == {"file", "name", "outcome", "message", "steps", "work", "ms", "failure_file", "line"}, bad
    assert (bad["failure_file"], bad["line"]) == ("a_test.lsh", 5), bad
    assert (load["file"], load["name"], load["outcome"]) == ("b_test.lsh", None, "fail")
    assert "load error [name]" in load["message"]
    assert summary == {"passed": 1, "failed": 2}
    r = run(["test", "--format", "yaml"], cwd=tmp_path)
    assert r.status == 2, r


def test_a_files_regex_compile_charge_does_not_depend_on_earlier_files(tmp_path):
    # The compiled-pattern cache is emptied at each run's start and end (issue 10): two
    # identical files are charged the same work, the second does not find the first's
    # pattern already compiled (it did: 139,007 units, then 42).
    body = 'fn test_one()\n  assert(re.test("([a-z]+)@([a-z]+)\\\\.(com|org)", "mail bob@example.com"))\nend\n'
    write(tmp_path, "a_test.lsh", body)
    write(tmp_path, "b_test.lsh", body)
    r = run(["test", "--format", "json"], cwd=tmp_path)
    assert r.status == 0, r
    objs = [json.loads(line) for line in r.out.splitlines()]
    works = [o["work"] for o in objs if "work" in o]
    assert len(works) == 2 and works[0] == works[1] and works[0] > 10000, objs


# ---------------------------------------------------------------------------
# Round 3 (SPEC 11): assert_eq failures that show what differs (issue 27)
# ---------------------------------------------------------------------------


def fail_message(tmp_path, body):
    write(tmp_path, "f_test.lsh", "fn test_f()\n" + body + "\nend\n")
    r = run(["test", "--format", "json"], cwd=tmp_path)
    assert r.status == 1, r
    return json.loads(r.out.splitlines()[0])["message"]


def test_assert_eq_names_the_paths_that_differ(tmp_path):
    m = fail_message(
        tmp_path,
        '  a = [{"name": "Ada", "age": 36}, {"name": "bob"}, 3, 4]\n'
        '  b = [{"name": "ada", "age": 36}, {"name": "bob", "x y": 1}, 3]\n'
        "  assert_eq(a, b)",
    )
    assert m.splitlines() == [
        "lists differ at 3 paths:",
        '  [0].name: expected "ada", got "Ada"',
        '  [1]["x y"]: expected 1, got <missing>',
        "  [3]: expected <missing>, got 4",
    ]
    m = fail_message(tmp_path, '  assert_eq({"a": {"b": [1, 2]}, "c": 1}, {"a": {"b": [1, 3]}, "c": 1}, "config")')
    assert m == "config: maps differ at 1 path:\n  .a.b[1]: expected 3, got 2"
    # Different types at the top: the plain message.
    assert fail_message(tmp_path, '  assert_eq([1], {"a": 1})') == 'expected {"a":1}, got [1]'


def test_assert_eq_lists_at_most_10_paths_then_a_count(tmp_path):
    m = fail_message(tmp_path, "  assert_eq(range(0, 100), range(1, 101))")
    lines = m.splitlines()
    assert lines[0] == "lists differ at 100 paths:"
    assert lines[1:11] == [f"  [{i}]: expected {i + 1}, got {i}" for i in range(10)]
    assert lines[11:] == ["  ... and 90 more"]
    # N = 10 differences: all listed, no count line.
    m = fail_message(tmp_path, "  assert_eq(range(0, 10), range(1, 11))")
    assert len(m.splitlines()) == 11 and "more" not in m


def test_assert_eq_multi_line_strings_show_a_unified_diff(tmp_path):
    m = fail_message(tmp_path, '  assert_eq("a\\nb\\nc\\n", "a\\nB\\nc\\n")')
    assert m == "strings differ:\n--- expected\n+++ actual\n@@ -1,3 +1,3 @@\n a\n-B\n+b\n c"
    # One-line strings: the plain message.
    assert fail_message(tmp_path, '  assert_eq("abc", "abd")') == 'expected "abd", got "abc"'


def test_assert_eq_quotes_are_bounded_and_charged(tmp_path):
    # A quoted value is cut at 200 bytes and says how much was cut.
    m = fail_message(tmp_path, '  assert_eq(repeat("x", 1000), "y")')
    assert m == 'expected "y", got "' + "x" * 200 + '..." (800 more bytes)'
    m = fail_message(tmp_path, '  assert_eq({"k": repeat("é", 1000)}, {"k": 1})')
    assert "more bytes" in m and len(m) < 400, m
    m = fail_message(tmp_path, "  assert_eq([range(0, 1000)], [1])")
    assert "(a list of 1000 items)" in m and len(m) < 400, m
    # Hostile: two 1 MiB multi-line strings that differ on every line; two
    # 16,000-item lists that differ everywhere. The message stays short; the walk is charged work.
    body = (
        '  a = repeat("a\\n", 500000)\n  b = repeat("b\\n", 500000)\n  assert_eq(a, b)'
    )
    write(tmp_path, "h_test.lsh", "fn test_h()\n" + body + "\nend\nfn test_l()\n"
          "  assert_eq(range(0, 16000), range(1, 16001))\nend\n")
    r = run(["test", "--format", "json", "h_test.lsh"], cwd=tmp_path, timeout=60)
    rows = [json.loads(line) for line in r.out.splitlines()]
    h, l = rows[0], rows[1]
    assert h["message"].endswith("more lines of the diff") and len(h["message"]) < 5000, h
    assert h["work"] > 2_000_000, h
    assert l["message"].endswith("... and 15990 more") and l["work"] > 16_000, l
