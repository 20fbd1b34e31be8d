"""Source, lines and tokens (SPEC 2 and the lexical part of 3)."""
import pytest


# --- source encoding and lines ------------------------------------------------


def test_leading_bom_is_ignored(script):
    r = script(b'\xef\xbb\xbfprint("bom")\n')
    assert (r.status, r.out) == (0, "bom\n")


def test_bom_before_shebang_is_ignored(script):
    r = script(b'\xef\xbb\xbf#!/usr/bin/env leash\nprint("ok")\n')
    assert (r.status, r.out) == (0, "ok\n")


@pytest.mark.parametrize(
    "src",
    [
        b'print("\xff")\n',
        b"x = 1\n# comment \xc3\x28\nprint(x)\n",
        b"print('\xed\xa0\x80')\n",  # an encoded surrogate is not UTF-8
        b"x = 1\xc3\n",
    ],
)
def test_invalid_utf8_source_is_encoding_load_error(script, src):
    r = script(src)
    assert r.status == 3, r
    assert r.diag["error"] == "load" and r.diag["kind"] == "encoding"
    assert r.out == ""


def test_encoding_error_has_line(script):
    r = script(b'print(1)\nprint(2)\nx = "\xfe"\n')
    assert r.status == 3
    assert r.diag["kind"] == "encoding" and r.diag["line"] == 3


def test_final_line_without_lf(script):
    r = script(b'print("a")\nprint("b")')
    assert (r.status, r.out) == (0, "a\nb\n")


def test_crlf_line_endings(script):
    r = script(b'x = "ab"\r\nif x == "ab"\r\nprint(len(x))\r\nend\r\n')
    assert (r.status, r.out) == (0, "2\n")


def test_cr_inside_raw_string_line_end_not_part_of_string(script):
    r = script(b"s = 'abc'\r\nprint(len(s))\r\n")
    assert (r.status, r.out) == (0, "3\n")


# --- identifiers ----------------------------------------------------------------


def test_identifier_forms(ok):
    assert ok("_ = 1\n_a1 = 2\nA_b_C = 3\nx9 = 4\nprint(_ + _a1 + A_b_C + x9)") == "10\n"


def test_identifier_case_sensitive(ok):
    assert ok("a = 1\nA = 2\nprint(a, A)") == "1 2\n"


def test_identifier_128_bytes_ok(ok):
    name = "v" * 128
    assert ok(f"{name} = 5\nprint({name})") == "5\n"


def test_identifier_129_bytes_is_load_limit(fails):
    name = "v" * 129
    fails(f"{name} = 5\nprint({name})", "identifier", status=3, error="load", line=1)


# --- numbers --------------------------------------------------------------------


@pytest.mark.parametrize(
    "lit,out",
    [
        ("12", "12"),
        ("0", "0"),
        ("1.5", "1.5"),
        ("2e-3", "0.002"),
        ("2E3", "2000"),
        ("1e2", "100"),
        ("1.5e+2", "150"),
        ("0xff", "255"),
        ("0xFF", "255"),
        ("0x0", "0"),
        ("0x10", "16"),
        ("007", "7"),
        ("1e308", "1e+308"),
        ("0.1", "0.1"),
    ],
)
def test_number_literals(ok, lit, out):
    assert ok(f"print({lit})") == out + "\n"


def test_tiny_literal_underflows_to_zero_is_fine(ok):
    assert ok("print(1e-400)") == "0\n"


# --- strings --------------------------------------------------------------------


@pytest.mark.parametrize(
    "lit,expected",
    [
        (r'"a\\b"', b"a\\b"),
        (r'"q\"q"', b'q"q'),
        (r'"\n"', b"\n"),
        (r'"\t"', b"\t"),
        (r'"\r"', b"\r"),
        (r'"\0"', b"\x00"),
        (r'"\$"', b"$"),
        (r'"\${x}"', b"${x}"),
        (r'"\x41\x62"', b"Ab"),
        (r'"\xff"', b"\xff"),
        (r'"\xC3\xA9"', "é".encode()),
        (r'"\u{41}"', b"A"),
        (r'"\u{e9}"', "é".encode()),
        (r'"\u{20AC}"', "€".encode()),
        (r'"\u{1F600}"', "😀".encode()),
        (r'"\u{01F600}"', "😀".encode()),
        (r'"\u{10FFFF}"', "\U0010ffff".encode()),
        (r'"\u{0}"', b"\x00"),
        ('"é€"', "é€".encode()),
        ('"a$b"', b"a$b"),
        ('"^a+b$"', b"^a+b$"),
        ('"$"', b"$"),
        ('"$$"', b"$$"),
        ('"cost: $5"', b"cost: $5"),
        ('""', b""),
    ],
)
def test_double_quoted_escapes(script, lit, expected):
    r = script(f"write({lit})\n")
    assert r.status == 0, r
    assert r.out_bytes == expected


# --- interpolation ----------------------------------------------------------------


@pytest.mark.parametrize(
    "code,out",
    [
        ('x = 3\nprint("x=${x}")', "x=3"),
        ('print("${1 + 2}")', "3"),
        ('print("${nil} ${true} ${false}")', "nil true false"),
        ('print("${[1, "a"]}")', '[1,"a"]'),
        ('print("${{"k": 1}}")', '{"k":1}'),
        ('print("${"inner"}")', "inner"),
        ('print("${"a" .. "${1 + 1}"}")', "a2"),
        ('print("a${1}b${2}c")', "a1b2c"),
        ('print("${1.5}")', "1.5"),
        ('x = "s"\nprint("$x ${x}")', "$x s"),
        ('print("${len("abc")}")', "3"),
        ('m = {"a": [10, 20]}\nprint("${m.a[1]}")', "20"),
        ("print('${1}' .. \"${2}\")", "${1}2"),
        ('print("{${1}}")', "{1}"),
    ],
)
def test_interpolation(ok, code, out):
    assert ok(code) == out + "\n"


def test_interpolation_error_is_runtime(fails):
    fails('print("${1 / 0}")', "arith")


def test_interpolation_of_unset_name(fails):
    fails('print("${nope}")\nif false\nnope = 1\nend', "name", line=1)


def test_string_literal_is_one_token(ok):
    # 1,000 commas inside a string do not count as tokens.
    s = "," * 5000
    assert ok(f'print(len("{s}"))') == "5000\n"
