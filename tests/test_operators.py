"""Operators and expressions (SPEC 3): precedence, associativity, types, errors."""


def test_trailing_commas_allowed(ok):
    # docs/LANGUAGE.md: a trailing comma is allowed in lists, maps and argument lists.
    assert ok('x = [1, 2,]\nm = {"a": 1,}\nprint(x, m, max(1, 2,))') == '[1,2] {"a":1} 2\n'


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
