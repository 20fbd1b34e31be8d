"""Operators and expressions (SPEC 3): precedence, associativity, types, errors."""
import pytest


def val(ok, expr):
    return ok(f"print({expr})")[:-1]


@pytest.mark.parametrize(
    "expr,out",
    [
        # arithmetic
        ("1 + 2", "3"),
        ("5 - 7", "-2"),
        ("6 * 7", "42"),
        ("7 / 2", "3.5"),
        ("1 / 3", "0.3333333333333333"),
        ("0.1 + 0.2", "0.30000000000000004"),
        ("2 ** 10", "1024"),
        ("2 ** 0.5", "1.4142135623730951"),
        ("2 ** -1", "0.5"),
        ("2 ** 3 ** 2", "512"),
        ("(2 ** 3) ** 2", "64"),
        ("-2 ** 2", "-4"),
        ("(-2) ** 2", "4"),
        ("- 3", "-3"),
        ("--3", "3"),
        ("-(-3)", "3"),
        ("1 - -1", "2"),
        ("2 * -3", "-6"),
        ("1 + 2 * 3", "7"),
        ("(1 + 2) * 3", "9"),
        ("10 - 2 - 3", "5"),
        ("100 / 10 / 5", "2"),
        ("2 * 3 ** 2", "18"),
        ("-2 ** -2", "-0.25"),
        # floored modulo: the result takes the divisor's sign
        ("7 % 3", "1"),
        ("-7 % 3", "2"),
        ("7 % -3", "-2"),
        ("-7 % -3", "-1"),
        ("6 % 3", "0"),
        ("-6 % 3", "0"),
        ("5.5 % 2", "1.5"),
        ("-5.5 % 2", "0.5"),
        ("7 % 2.5", "2"),
        ("1 + 7 % 4 * 2", "7"),
        # concatenation
        ('"a" .. "b"', "ab"),
        ("1 .. 2", "12"),
        ("1 + 2 .. 3", "33"),
        ("1 .. 2 + 3", "15"),
        ('"x" .. nil', "xnil"),
        ('true .. "!"', "true!"),
        ('[1, 2] .. "x"', "[1,2]x"),
        ('{"a": 1} .. ""', '{"a":1}'),
        ("1.5 .. 2", "1.52"),
        ('"a" .. "b" .. "c"', "abc"),
        ('"n=" .. 2 * 3', "n=6"),
        # comparisons
        ("1 < 2", "true"),
        ("2 < 1", "false"),
        ("2 <= 2", "true"),
        ("3 >= 4", "false"),
        ("3 > -4", "true"),
        ('"abc" < "abd"', "true"),
        ('"B" < "a"', "true"),
        ('"" < "a"', "true"),
        ('"ab" < "a"', "false"),
        ('"z" < "é"', "true"),
        ('"a" <= "a"', "true"),
        ("1 == 1", "true"),
        ("1 == 1.0", "true"),
        ("0 == -0", "true"),
        ('1 == "1"', "false"),
        ('1 != "1"', "true"),
        ("nil == nil", "true"),
        ("nil == false", "false"),
        ("0 == false", "false"),
        ('"" == nil', "false"),
        ("true == 1", "false"),
        ("[1, [2, 3]] == [1, [2, 3]]", "true"),
        ("[1, 2] == [2, 1]", "false"),
        ("[1] == [1, 1]", "false"),
        ('{"a": 1, "b": [1]} == {"a": 1, "b": [1]}', "true"),
        ('{"a": 1} == {"a": 2}', "false"),
        ('{"a": 1} == {"b": 1}', "false"),
        ("[] == {}", "false"),
        ('"abc" == "abc"', "true"),
        ('"abc" != "abd"', "true"),
        ("[1, 2] != [1, 2]", "false"),
        ("1 + 1 == 2", "true"),
        ('"a" .. "b" == "ab"', "true"),
        # membership
        ("2 in [1, 2, 3]", "true"),
        ("4 in [1, 2, 3]", "false"),
        ('"2" in [1, 2, 3]', "false"),
        ("[1] in [[1], 2]", "true"),
        ('"a" in {"a": 1}', "true"),
        ('"b" in {"a": 1}', "false"),
        ('1 in {"1": 1}', "false"),
        ('nil in {"a": 1}', "false"),
        ('"bc" in "abcd"', "true"),
        ('"x" in "abcd"', "false"),
        ('"" in "abc"', "true"),
        ('"" in ""', "true"),
        ("4 not in [1, 2]", "true"),
        ("1 not in [1, 2]", "false"),
        ('"k" not in {"k": 0}', "false"),
        ('"z" not in "abc"', "true"),
        ("1 in []", "false"),
        ("nil in [nil]", "true"),
        # logic
        ("true and false", "false"),
        ("1 and 2", "2"),
        ("0 and 2", "0"),
        ('"" and 2', ""),
        ("nil and 2", "nil"),
        ("1 or 2", "1"),
        ("false or 0", "0"),
        ('nil or "d"', "d"),
        ("false or nil", "nil"),
        ("[] or {}", "{}"),
        ("not true", "false"),
        ("not nil", "true"),
        ("not 0", "true"),
        ("not 1", "false"),
        ('not ""', "true"),
        ('not "a"', "false"),
        ("not []", "true"),
        ("not [0]", "false"),
        ("not {}", "true"),
        ('not {"a": nil}', "false"),
        ("not not 5", "true"),
        ("not 1 == 2", "true"),
        ("not 1 in [1]", "false"),
        ("true or false and false", "true"),
        ("(true or false) and false", "false"),
        ("not false and false", "false"),
        ("1 < 2 and 2 < 3", "true"),
        ("1 == 1 or 1 / 0", "true"),
        ("0.0 or 7", "7"),
        ("-0 or 8", "8"),
        # field, index, call
        ('{"a": {"b": [5, 6]}}.a.b[1]', "6"),
        ('[[1, 2], [3, 4]][1][0]', "3"),
        ('[1, 2, 3][-1]', "3"),
        ('"abc"[0]', "a"),
        ('"abc"[-1]', "c"),
        ('len("abc") * 2', "6"),
        ('{"k": 1}["k"]', "1"),
        ('{ab: 1, _z: 2, x_1: 3}', '{"ab":1,"_z":2,"x_1":3}'),
        ('{a: 1, "b c": 2}', '{"a":1,"b c":2}'),
        ('{}', "{}"),
        ('[]', "[]"),
        ('[1, [2, [3]]]', "[1,[2,[3]]]"),
        ("((((1))))", "1"),
    ],
)
def test_expression_values(ok, expr, out):
    assert val(ok, expr) == out


def test_bare_key_names_a_string_not_a_variable(ok):
    assert ok('a = "zzz"\nm = {a: 1}\nprint(m, m.a)') == '{"a":1} 1\n'


def test_trailing_commas_allowed(ok):
    # docs/LANGUAGE.md: a trailing comma is allowed in lists, maps and argument lists.
    assert ok('x = [1, 2,]\nm = {"a": 1,}\nprint(x, m, max(1, 2,))') == '[1,2] {"a":1} 2\n'


def test_and_short_circuits(ok):
    code = """fn boom()
print("called")
return 1
end
a = false and boom()
b = nil and boom()
c = 1 or boom()
print(a, b, c)
d = true and boom()
e = false or boom()
print(d, e)
"""
    assert ok(code) == "false nil 1\ncalled\ncalled\n1 1\n"


def test_or_short_circuit_skips_errors(ok):
    assert ok("x = true or 1 / 0\ny = false and nope_unset\nprint(x, y)\nif false\nnope_unset = 1\nend") == "true false\n"


@pytest.mark.parametrize(
    "expr",
    ["1 < 2 < 3", "1 == 1 == true", "1 < 2 == true", '"a" in "abc" in [true]', "1 != 2 != 3", "1 <= 2 >= 1"],
)
def test_comparisons_are_not_associative(script, expr):
    r = script(f"x = 1\ny = {expr}\n")
    assert r.status == 3, r
    assert r.diag["error"] == "load" and r.diag["line"] == 2


def test_comparison_with_parentheses_is_fine(ok):
    assert ok("print((1 < 2) == true)") == "true\n"


def test_concat_is_right_associative(ok):
    # Right associativity is only visible through evaluation order of str();
    # the result of a chain is the plain concatenation.
    assert ok('print(1 .. 2 .. 3 .. "x" .. nil)') == "123xnil\n"


@pytest.mark.parametrize(
    "expr,kind",
    [
        ('"a" + 1', "type"),
        ('"1" + 1', "type"),
        ("1 + nil", "type"),
        ("true + 1", "type"),
        ("[1] + [2]", "type"),
        ('"ab" * 2', "type"),
        ("1 - []", "type"),
        ('{} / 1', "type"),
        ('"7" % 2', "type"),
        ('2 ** "2"', "type"),
        ('-"a"', "type"),
        ("-nil", "type"),
        ("-[1]", "type"),
        ('1 < "2"', "type"),
        ('"a" > 1', "type"),
        ("nil < 1", "type"),
        ("[1] < [2]", "type"),
        ("{} <= {}", "type"),
        ("true >= false", "type"),
        ("1 in 5", "type"),
        ('"a" in nil', "type"),
        ("1 in \"123\"", "type"),
        ("1 / 0", "arith"),
        ("0 / 0", "arith"),
        ("1 % 0", "arith"),
        ("5.5 % 0", "arith"),
        ("1e308 * 10", "arith"),
        ("-1e308 * 10", "arith"),
        ("1e308 + 1e308", "arith"),
        ("-1e308 - 1e308", "arith"),
        ("2 ** 10000", "arith"),
        ("(-8) ** 0.5", "arith"),
        ("0 ** -1", "arith"),
        ("1e300 / 1e-300", "arith"),
        ("[1, 2][2]", "index"),
        ("[1, 2][-3]", "index"),
        ("[][0]", "index"),
        ('"abc"[3]', "index"),
        ('"abc"[-4]', "index"),
        ('""[0]', "index"),
        ("[1, 2][0.5]", "value"),
        ('"abc"[1.5]', "value"),
        ('[1, 2]["0"]', "type"),
        ('{"a": 1}["b"]', "key"),
        ('{"a": 1}.b', "key"),
        ("{}.x", "key"),
        ('{"a": 1}[0]', "type"),
        ("5[0]", "type"),
        ("nil[0]", "type"),
        ("nil.x", "type"),
        ('"abc".x', "type"),
        ("[1].x", "type"),
        ("true[0]", "type"),
    ],
)
def test_expression_errors(fails, expr, kind):
    fails(f"x = 1\ny = {expr}\nprint(y)", kind, line=2)


def test_overflow_at_the_edge(ok, fails):
    assert val(ok, "1.7976931348623157e308") == "1.7976931348623157e+308"
    fails("x = 1.7976931348623157e308 * 2", "arith")
    assert val(ok, "1.7976931348623157e308 * -1") == "-1.7976931348623157e+308"


def test_modulo_of_negative_zero_prints_zero(ok):
    assert val(ok, "-3 % 3") == "0"
    assert val(ok, "-0 * 5") == "0"


@pytest.mark.parametrize(
    "src",
    ["x = 1 +", "x = (1", "x = 1)", "x = [1, 2", "x = {", 'x = {"a" 1}', "x = 1 2", "x = * 2",
     "x = a..", "x = f(", "x = 1 = 2", "x = not", "x = [1 2]", "x = .5.5", "x = a.1"],
)
def test_malformed_expressions_are_syntax_errors(script, src):
    r = script(src + "\n")
    assert r.status == 3 and r.diag["kind"] == "syntax", r


def test_equality_is_structural_for_nested(ok):
    code = """a = {"x": [1, {"y": "z"}], "n": nil}
b = {"x": [1, {"y": "z"}], "n": nil}
print(a == b, a != b)
b.x[1].y = "w"
print(a == b, a != b)
"""
    assert ok(code) == "true false\nfalse true\n"


def test_string_comparison_is_bytewise(ok):
    assert ok('print("\\xff" > "\\x7f", "a\\0" > "a", "Z" < "a")') == "true true true\n"


def test_arithmetic_matches_ieee_reference(script):
    # Random operands; expected results computed in Python (IEEE binary64, floored %),
    # compared inside Leash with == so that number formatting plays no part.
    import math
    import random

    rnd = random.Random(5)

    def rv():
        k = rnd.random()
        if k < 0.3:
            return float(rnd.randint(-50, 50))
        if k < 0.5:
            return float(rnd.randint(-2**40, 2**40))
        if k < 0.7:
            return rnd.randint(-1000, 1000) / 8
        if k < 0.85:
            return rnd.uniform(-1e6, 1e6)
        return rnd.uniform(-1, 1) * 10 ** rnd.randint(-20, 20)

    lines = []
    for _ in range(1500):
        a, b = rv(), rv()
        op = rnd.choice(["+", "-", "*", "/", "%"])
        if op in "/%" and b == 0:
            continue
        if op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        elif op == "/":
            r = a / b
        else:
            r = math.fmod(a, b)
            if r != 0 and (r < 0) != (b < 0):
                r += b
        if math.isinf(r) or math.isnan(r):
            continue
        lines.append(f'assert(({a!r}) {op} ({b!r}) == ({r!r}), "{a!r} {op} {b!r}")')
    r = script("\n".join(lines) + '\nprint("ok")\n', opts=["--max-steps", "100000"])
    assert (r.status, r.out) == (0, "ok\n"), r
