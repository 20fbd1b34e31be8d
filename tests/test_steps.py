"""Step accounting (SPEC 8): every charging rule, exact counts via --stats, budget edges."""
import pytest

FIB = """fn fib(n)
if n < 2
return n
end
return fib(n - 1) + fib(n - 2)
end
x = fib(5)
"""

CASES = [
    # plain statements
    ("one_assignment", "x = 1", 1),
    ("three_statements", "x = 1\nx = 2\nprint(x)", 3),
    ("blank_and_comments_free", "# comment\n\n   \nx = 1 # trailing\n\n# end", 1),
    ("shebang_free", "#!/usr/bin/env leash\nx = 1", 1),
    ("nested_calls_one_line", "x = len(str([1, 2, 3])) + abs(-1) + len(\"${[1]}\")", 1),
    ("call_statement", "print(1)", 1),
    ("exit_counts", "x = 1\nexit(0)\nx = 2", 2),
    # if / elif / else
    ("if_true", "if true\nx = 1\nend", 2),
    ("if_false", "if false\nx = 1\nend", 1),
    ("else_is_free", "if false\nx = 1\nelse\nx = 2\nend", 2),
    ("elif_chain_evaluated", "if false\nelif false\nelif true\nx = 1\nelse\nx = 2\nend", 4),
    ("elif_not_evaluated", "if true\nx = 1\nelif true\nx = 2\nelif true\nend", 2),
    ("all_false_to_else", "if false\nelif false\nelse\nx = 1\nend", 3),
    # while
    ("while_n_plus_1", "i = 0\nwhile i < 3\ni += 1\nend", 1 + 4 + 3),
    ("while_zero", "while false\nx = 1\nend", 1),
    ("while_break", "i = 0\nwhile true\ni += 1\nif i == 3\nbreak\nend\nend", 1 + 3 * 3 + 1),
    ("while_continue", "i = 0\nwhile i < 2\ni += 1\ncontinue\nx = 1\nend", 1 + 3 + 2 + 2),
    # for range
    ("for_range", "for i = 1 to 3\nend", 4),
    ("for_range_body", "for i = 1 to 3\nx = i\nend", 4 + 3),
    ("for_range_zero", "for i = 3 to 1\nx = 1\nend", 1),
    ("for_range_step", "for i = 1 to 10 step 3\nend", 5),
    ("for_range_negative_step", "for i = 3 to 1 step -1\nend", 4),
    ("for_range_break", "for i = 1 to 10\nbreak\nend", 2),
    ("for_range_continue", "for i = 1 to 2\ncontinue\nend", 3 + 2),
    ("for_float_step", "for x = 0 to 1 step 0.1\nend", 12),
    # for in
    ("for_in_list", "for x in [1, 2]\nend", 3),
    ("for_in_empty", "for x in []\nx = 1\nend", 1),
    ("for_in_map", 'for k, v in {"a": 1, "b": 2, "c": 3}\ny = v\nend', 4 + 3),
    ("for_in_break", "for x in [1, 2, 3]\nif x == 2\nbreak\nend\nend", 5),
    ("nested_loops", "for i = 1 to 2\nfor j = 1 to 3\nend\nend", 3 + 2 * 4),
    # try / throw / catch
    ("try_no_error", "try\nx = 1\ncatch e\nx = 2\nend", 2),
    ("try_throw", "try\nthrow 1\nx = 5\ncatch e\nx = 2\nend", 3),
    ("try_runtime_error", "try\nx = 1 / 0\ny = 1\ncatch e\nz = e.kind\nend", 3),
    ("nested_try", "try\ntry\nthrow 1\ncatch a\nthrow 2\nend\ncatch b\nend", 4),
    # functions
    ("fn_definition_free", "fn f()\nx = 1\nend\nfn g(a, b)\nend\ny = 2", 1),
    ("call_with_return", "fn f()\nreturn 1\nend\nx = f()", 2),
    ("call_implicit_return_free", "fn f()\nx = 1\nend\nf()", 2),
    ("bare_return", "fn f()\nreturn\nend\nf()", 2),
    ("global_free", "fn f()\nglobal g\ng = 1\nend\nf()", 2),
    ("function_blank_lines_free", "fn f()\n\n# note\nx = 1\n\nend\nf()", 2),
    ("calls_in_condition", "fn t()\nreturn true\nend\nif t() and t()\nend", 1 + 2),
    ("return_in_loop", "fn f()\nfor i = 1 to 5\nreturn i\nend\nend\nx = f()", 1 + 1 + 1),
    ("fib5", FIB, 31),
    ("function_called_twice", "fn f(x)\ny = x\nreturn y\nend\na = f(1)\nb = f(2)", 2 + 2 * 2),
    ("while_condition_calls", "n = 0\nfn more()\nglobal n\nn += 1\nreturn n <= 2\nend\nwhile more()\nend", 1 + 3 * 3),
]


@pytest.mark.parametrize("name,code,steps", CASES, ids=[c[0] for c in CASES])
def test_exact_step_count(script, name, code, steps):
    r = script(code + "\n", opts=["--stats"])
    assert r.status == 0, r
    assert r.stats["steps"] == steps, (name, r.stats)


def test_include_line_free_included_lines_charged(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("# lib\na = 1\nfn f()\nreturn 2\nend\n\nb = 3\n")
    r = script('include "lib.lsh"\ninclude "lib.lsh"\nx = f()\n', opts=["--stats"])
    assert r.status == 0, r
    assert r.stats["steps"] == 2 + 2
