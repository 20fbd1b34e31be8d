"""Core builtins (SPEC 10, no namespace): results and error kinds."""
import pytest

# (expression, printed result)
VALUES = [
    # types
    ("type(nil)", "nil"),
    ('type("")', "string"),
    ("str(12.50)", "12.5"),
    ('str("x")', "x"),
    ('num("12")', "12"),
    ('num("-3.5")', "-3.5"),
    ('num("1.5e3")', "1500"),
    ('num("0")', "0"),
    ('num("2E-3")', "0.002"),
    ('num("007")', "7"),
    ('type(num("4"))', "number"),
    ("int(3.7)", "3"),
    ("int(-3.7)", "-3"),
    ("int(0.2)", "0"),
    ("int(-0.2)", "0"),
    ("int(5)", "5"),
    ('int("42")', "42"),
    ('int("3.9")', "3"),
    ('int("-2.5")', "-2"),
    ("int(1e20)", "100000000000000000000"),
    ("bool(1)", "true"),
    ("bool(0)", "false"),
    ('bool("")', "false"),
    ('bool("0")', "true"),
    ("bool([])", "false"),
    ("bool({})", "false"),
    ("bool(nil)", "false"),
    ("bool([nil])", "true"),
    # len, keys, values
    ('len("")', "0"),
    ('len("abc")', "3"),
    ('len("é")', "2"),
    ('len("\\u{1F600}")', "4"),
    ("len([1, [2, 3]])", "2"),
    ('len({"a": 1, "b": 2})', "2"),
    ("len({})", "0"),
    ('keys({"b": 1, "a": 2})', '["b","a"]'),
    ("keys({})", "[]"),
    ('values({"b": 1, "a": [2]})', "[1,[2]]"),
    # get
    ('get({"a": 1}, "a")', "1"),
    ('get({"a": 1}, "b")', "nil"),
    ('get({"a": 1}, "b", 0)', "0"),
    ('get({"a": nil}, "a", 5)', "nil"),
    ("get([10, 20], 1)", "20"),
    ("get([10, 20], 2)", "nil"),
    ('get([10, 20], 2, "d")', "d"),
    ("get([10, 20], -1)", "20"),
    ("get([], 0, [])", "[]"),
    # slice
    ("slice([1, 2, 3, 4], 1, 3)", "[2,3]"),
    ("slice([1, 2, 3, 4], 1)", "[2,3,4]"),
    ("slice([1, 2, 3, 4], -2)", "[3,4]"),
    ("slice([1, 2, 3, 4], 0, -1)", "[1,2,3]"),
    ("slice([1, 2, 3, 4], -3, -1)", "[2,3]"),
    ("slice([1, 2, 3], 2, 1)", "[]"),
    ("slice([1, 2, 3], 0, 0)", "[]"),
    ("slice([1, 2, 3], 0, 3)", "[1,2,3]"),
    ("slice([], 0)", "[]"),
    ('slice("hello", 1, 3)', "el"),
    ('slice("hello", -3)', "llo"),
    ('slice("hello", 0, -1)', "hell"),
    ('slice("hello", 5)', ""),
    # sort, sort_by, reverse
    ("sort([3, 1, 2])", "[1,2,3]"),
    ("sort([10, 9, 100, -1, 0.5])", "[-1,0.5,9,10,100]"),
    ('sort(["b", "B", "a", "aa", ""])', '["","B","a","aa","b"]'),
    ('sort(["é", "z", "e"])', '["e","z","é"]'),
    ("sort([])", "[]"),
    ("sort([1])", "[1]"),
    ('sort_by([{"n": 2, "s": "b"}, {"n": 1, "s": "a"}, {"n": 3, "s": "c"}], "n")',
     '[{"n":1,"s":"a"},{"n":2,"s":"b"},{"n":3,"s":"c"}]'),
    ('sort_by([{"k": "b", "i": 0}, {"k": "a", "i": 1}, {"k": "b", "i": 2}, {"k": "a", "i": 3}], "k")',
     '[{"k":"a","i":1},{"k":"a","i":3},{"k":"b","i":0},{"k":"b","i":2}]'),
    ("sort_by([], \"x\")", "[]"),
    ("reverse([1, 2, 3])", "[3,2,1]"),
    ("reverse([])", "[]"),
    ('reverse("abc")', "cba"),
    ('reverse("")', ""),
    # index_of
    ("index_of([5, 6, 7], 7)", "2"),
    ("index_of([5, 6, 7], 8)", "-1"),
    ("index_of([1, 2, 1], 1)", "0"),
    ('index_of([1, "1"], "1")', "1"),
    ("index_of([[1], [2]], [2])", "1"),
    ('index_of("hello", "l")', "2"),
    ('index_of("hello", "z")', "-1"),
    # range
    ("range(5)", "[0,1,2,3,4]"),
    ("range(0)", "[]"),
    ("range(-2)", "[]"),
    ("range(1, 4)", "[1,2,3]"),
    ("range(4, 1)", "[]"),
    ("range(0, 10, 3)", "[0,3,6,9]"),
    ("range(5, 0, -2)", "[5,3,1]"),
    ("range(0, 5, -1)", "[]"),
    ("range(-3, 0)", "[-3,-2,-1]"),
    ("len(range(16384))", "16384"),
    # sum, min, max
    ("sum([1, 2, 3.5])", "6.5"),
    ("sum([])", "0"),
    ("min([3, 1, 2])", "1"),
    ("max([3, 1, 2])", "3"),
    ("min(3, 1)", "1"),
    ("max(3, 1, 7, 2)", "7"),
    ("min([-1])", "-1"),
    ("max(-0.5, -1)", "-0.5"),
    # join, split, lines
    ('join(["a", "b", "c"], ", ")', "a, b, c"),
    ('join([], ",")', ""),
    ('join(["x"], ",")', "x"),
    ('join([1, nil, true], "")', "1niltrue"),
    ('split("a,b,,c", ",")', '["a","b","","c"]'),
    ('split("abc", ",")', '["abc"]'),
    ('split("", ",")', '[""]'),
    ('split("a b c", " ", 1)', '["a","b c"]'),
    ('split("a b c", " ", 0)', '["a b c"]'),
    ('split("a b c", " ", 5)', '["a","b","c"]'),
    ('split("a::b::c", "::")', '["a","b","c"]'),
    ('split(",a,", ",")', '["","a",""]'),
    ('lines("a\\nb\\n")', '["a","b"]'),
    ('lines("a\\nb")', '["a","b"]'),
    ('lines("a\\r\\nb\\r\\n")', '["a","b"]'),
    ('lines("a\\n\\nb")', '["a","","b"]'),
    ('lines("")', "[]"),
    ('lines("\\n")', '[""]'),
    ('lines("x\\ry")', '["x\\ry"]'),
    # strings
    ('upper("abc Éé ß")', "ABC ÉÉ SS"),
    ('lower("ABC ÉÈ")', "abc éè"),
    ('upper("")', ""),
    ('trim("  a b \\t\\n")', "a b"),
    ('trim_start("  a ")', "a "),
    ('trim_end("  a \\r\\n")', "  a"),
    ('trim("")', ""),
    ('trim("   ")', ""),
    ('replace("a-b-c", "-", "+")', "a+b+c"),
    ('replace("aaa", "a", "b", 2)', "bba"),
    ('replace("aaa", "a", "b", 0)', "aaa"),
    ('replace("abc", "x", "y")', "abc"),
    ('replace("aaaa", "aa", "a")', "aa"),
    ('replace("abc", "b", "")', "ac"),
    ('starts_with("hello", "he")', "true"),
    ('starts_with("hello", "lo")', "false"),
    ('starts_with("hello", "")', "true"),
    ('ends_with("hello", "lo")', "true"),
    ('ends_with("lo", "hello")', "false"),
    ('find("hello", "l")', "2"),
    ('find("héllo", "l")', "3"),
    ('find("hello", "z")', "-1"),
    ('find("hello", "")', "0"),
    ('repeat("ab", 3)', "ababab"),
    ('repeat("ab", 0)', ""),
    ('repeat("", 10)', ""),
    ('chars("aé😀")', '["a","é","😀"]'),
    ('chars("")', "[]"),
    ('ord("A")', "65"),
    ('ord("é")', "233"),
    ('ord("😀")', "128512"),
    ("chr(65)", "A"),
    ("chr(233)", "é"),
    ("chr(128512)", "😀"),
    ('len(chr(0x10FFFF))', "4"),
    ('pad_left("5", 3)', "  5"),
    ('pad_left("5", 3, "0")', "005"),
    ('pad_left("abc", 2)', "abc"),
    ('pad_right("ab", 4) .. "|"', "ab  |"),
    ('pad_right("ab", 4, ".")', "ab.."),
    ('pad_left("", 0)', ""),
    # numbers
    ("abs(-3)", "3"),
    ("abs(2.5)", "2.5"),
    ("abs(-0)", "0"),
    ("floor(1.7)", "1"),
    ("floor(-1.5)", "-2"),
    ("floor(3)", "3"),
    ("ceil(1.2)", "2"),
    ("ceil(-1.5)", "-1"),
    ("round(2.5)", "3"),
    ("round(-2.5)", "-3"),
    ("round(0.5)", "1"),
    ("round(1.4)", "1"),
    ("round(-0.4)", "0"),
    ("round(1.2345, 2)", "1.23"),
    ("round(2.675, 1)", "2.7"),
    ("round(7, 3)", "7"),
    ("round(0.125, 2)", "0.13"),
    ("sqrt(16)", "4"),
    ("sqrt(2)", "1.4142135623730951"),
    ("sqrt(0)", "0"),
    # program
    ("args()", "[]"),
    ("assert(true)", "nil"),
    ('assert(1, "m")', "nil"),
    ("assert_eq([1, {\"a\": 2}], [1, {\"a\": 2}])", "nil"),
]


# (code, kind): each line 1 fails with a runtime error of that kind
ERRORS = [
    ('x = num("abc")', "parse"),
    ('x = num("")', "parse"),
    ('x = num("1x")', "parse"),
    ('x = num("nan")', "parse"),
    ('x = num("inf")', "parse"),
    ('x = num("1e999")', "parse"),
    ("x = num(nil)", "type"),
    ("x = num([])", "type"),
    ('x = int("abc")', "parse"),
    ("x = int(nil)", "type"),
    ("x = int([1])", "type"),
    ("x = len(5)", "type"),
    ("x = len(nil)", "type"),
    ("x = len(true)", "type"),
    ("x = keys([1])", "type"),
    ('x = values("s")', "type"),
    ("x = get(5, 1)", "type"),
    ("x = get([1], 0.5)", "value"),
    ('x = get({"a": 1}, 1)', "type"),
    ("l = 5\npush(l, 1)", "type"),
    ("m = {}\npush(m, 1)", "type"),
    ("l = []\nx = pop(l)", "index"),
    ("s = \"ab\"\nx = pop(s)", "type"),
    ("l = [1]\ninsert(l, 3, 0)", "index"),
    ("l = [1]\ninsert(l, 0.5, 0)", "value"),
    ('l = [1]\ninsert(l, "0", 0)', "type"),
    ("l = [1]\nx = remove(l, 1)", "index"),
    ("l = [1]\nx = remove(l, 0.5)", "value"),
    ('m = {"a": 1}\nx = remove(m, "b")', "key"),
    ('m = {"a": 1}\nx = remove(m, 0)', "type"),
    ("x = slice(5, 0)", "type"),
    ("x = slice([1], 0.5)", "value"),
    ('x = slice([1], "0")', "type"),
    ('x = sort([1, "a"])', "type"),
    ("x = sort([nil, 1])", "type"),
    ("x = sort([[1], [0]])", "type"),
    ('x = sort("cba")', "type"),
    ('x = sort_by([{"a": 1}, {"b": 2}], "a")', "key"),
    ('x = sort_by([1, 2], "a")', "type"),
    ('x = sort_by([{"a": 1}, {"a": "x"}], "a")', "type"),
    ("x = reverse(5)", "type"),
    ("x = index_of(5, 1)", "type"),
    ("x = range(0, 5, 0)", "value"),
    ('x = range("5")', "type"),
    ("x = range(16385)", "list"),
    ('x = sum([1, "2"])', "type"),
    ("x = sum(5)", "type"),
    ("x = min([])", "value"),
    ("x = max([])", "value"),
    ("x = min(5)", "type"),
    ('x = max("a", "b")', "type"),
    ('x = max([1, "b"])', "type"),
    ('x = join("ab", ",")', "type"),
    ('x = join(["a"], 5)', "type"),
    ('x = split("a,b", "")', "value"),
    ('x = split(5, ",")', "type"),
    ('x = split("a b", " ", -1)', "value"),
    ('x = split("a b", " ", 1.5)', "value"),
    ("x = lines(5)", "type"),
    ("x = upper(5)", "type"),
    ("x = lower(nil)", "type"),
    ("x = trim([])", "type"),
    ('x = replace("abc", "", "x")', "value"),
    ('x = replace("abc", "a", 1)', "type"),
    ('x = replace("abc", "a", "b", -1)', "value"),
    ('x = starts_with("abc", 1)', "type"),
    ('x = ends_with(1, "a")', "type"),
    ('x = find("abc", 1)', "type"),
    ('x = repeat("a", -1)', "value"),
    ('x = repeat("a", 1.5)', "value"),
    ("x = repeat(1, 2)", "type"),
    ('x = repeat("ab", 524289)', "string"),
    ('x = chars("\\xff")', "value"),
    ("x = chars(1)", "type"),
    ('x = ord("")', "value"),
    ('x = ord("ab")', "value"),
    ("x = ord(65)", "type"),
    ("x = chr(-1)", "value"),
    ("x = chr(0x110000)", "value"),
    ("x = chr(0xD800)", "value"),
    ("x = chr(65.5)", "value"),
    ('x = chr("A")', "type"),
    ('x = pad_left("a", 3, "xy")', "value"),
    ('x = pad_left("a", 3, "")', "value"),
    ('x = pad_left("a", -1)', "value"),
    ('x = pad_right("a", 1.5)', "value"),
    ("x = pad_left(1, 3)", "type"),
    ('x = abs("1")', "type"),
    ("x = floor(nil)", "type"),
    ('x = ceil("1")', "type"),
    ('x = round("1")', "type"),
    ("x = round(1.5, 0.5)", "value"),
    ("x = sqrt(-1)", "arith"),
    ('x = sqrt("4")', "type"),
    ("assert(false)", "assert"),
    ("assert(nil)", "assert"),
    ("assert(0)", "assert"),
    ('assert("")', "assert"),
    ("assert([])", "assert"),
    ("assert_eq(1, 2)", "assert"),
    ('assert_eq(1, "1")', "assert"),
    ("assert_eq([1], [1, 2])", "assert"),
    ('x = str("a", "b")', None),
]


# --- output ---------------------------------------------------------------------


# --- place builtins -----------------------------------------------------------------


# --- args / assert --------------------------------------------------------------


def test_sort_matches_reference(script):
    import random

    rnd = random.Random(11)
    alphabet = ["a", "b", "B", "z", "é", "€", "😀", " ", "0", "~"]
    strs = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6))) for _ in range(300)]
    nums = [rnd.choice([rnd.randint(-1000, 1000), rnd.uniform(-1e9, 1e9), rnd.randint(-5, 5) / 4]) for _ in range(300)]
    want_s = sorted(strs, key=lambda s: s.encode())
    want_n = sorted(nums)
    slit = "[" + ", ".join('"' + s + '"' for s in strs) + "]"
    wlit = "[" + ", ".join('"' + s + '"' for s in want_s) + "]"
    nlit = "[" + ", ".join(repr(float(x)) for x in nums) + "]"
    wnlit = "[" + ", ".join(repr(float(x)) for x in want_n) + "]"
    code = f"s = {slit}\nw = {wlit}\nassert(sort(s) == w)\nn = {nlit}\nv = {wnlit}\nassert(sort(n) == v)\nprint(\"ok\")\n"
    r = script(code)
    assert (r.status, r.out) == (0, "ok\n"), r


def test_sort_by_is_stable(script):
    import random

    rnd = random.Random(3)
    rows = [{"k": rnd.randint(0, 5), "i": i} for i in range(400)]
    want = sorted(rows, key=lambda m: m["k"])
    build = "rows = []\n" + "".join(f'push(rows, {{"k": {m["k"]}, "i": {m["i"]}}})\n' for m in rows)
    order = "".join(f"push(want, {m['i']})\n" for m in want)
    code = build + "want = []\n" + order + 'r = sort_by(rows, "k")\nidx = []\nfor m in r\npush(idx, m.i)\nend\nassert(idx == want)\nprint("ok")\n'
    r = script(code)
    assert (r.status, r.out) == (0, "ok\n"), r


def test_eprint_flushes_stdout_first(tmp_path):
    import subprocess

    from conftest import LEASH

    p = subprocess.run(
        [str(LEASH), "-e", 'print("a")\nwrite("b")\neprint("c")\nprint("d")\nx = 1 / 0'],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert p.returncode == 1
    lines = p.stdout.decode().splitlines()
    assert lines[:3] == ["a", "bc", "d"], lines
    assert "runtime error [arith]" in lines[3]
