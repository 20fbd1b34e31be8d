"""re.test / re.match / re.find_all / re.replace / re.split on a linear-time engine."""
import json
import re as pyre

import pytest


def lit(s):
    """A Leash string literal for `s` (`$` escaped: `${` interpolates in Leash)."""
    return json.dumps(s, ensure_ascii=False).replace("$", "\\$")


def run_json(script, expr):
    r = script(f"print(json.stringify({expr}))")
    assert r.status == 0, r
    return json.loads(r.out)


@pytest.mark.parametrize(
    "pat,s,expected",
    [
        (r"\d+", "abc 123", True),
        (r"^\d+$", "abc 123", False),
        (r"(?i)hello", "HeLLo", True),
        (r"é", "café", True),
        (r"^.$", "é", True),
        (r"\bword\b", "a word here", True),
        (r"", "", True),
    ],
)
def test_test(script, pat, s, expected):
    assert run_json(script, f"re.test({lit(pat)}, {lit(s)})") is expected


@pytest.mark.parametrize(
    "pat,s",
    [
        (r"(\d+)-(\d+)", "call 555-1234 or 555-9876"),
        (r"(a)|(b)", "b"),
        (r"(?P<year>\d{4})-(?P<month>\d\d)", "on 2024-02-29"),
        (r"x*", "abc"),
        (r"(\w+)@(\w+)\.com", "mail bob@example.com now"),
        (r"nomatch", "abc"),
        (r"(é+)(ü)?", "xééy"),
        # Patterns the specialised capture engine models (ASCII subjects).
        (
            r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)',
            '1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET /a/b?q=1 HTTP/1.1" 404 - "-" "x"',
        ),
        (r"(a|ab)(c|bcd)(d*)", "xabcd"),
        (r"((a)|b)+", "ab"),
        (r"(\S*)(\S*)(x?)", "abc def"),
        (r"([ab]{2,4})([ab]{0,2}?)(b)?", "ababab b"),
        (r"(a+?)(a*)", "aaa"),
        (r"(\d{1,3})(\d*)", "x12345"),
        (r"(a)|(b)|(c)", "zc"),
        (r"\b(\w+)\s*(\w*)$", "one two"),
        # The specialised engine gives up on this one (its step budget): the fallback.
        (r"(a*)(a*)(a*)c|(a*)b", "a" * 200 + "b"),
    ],
)
def test_match_agrees_with_python(script, pat, s):
    got = run_json(script, f"re.match({lit(pat)}, {lit(s)})")
    m = pyre.search(pat, s)
    assert got == (None if m is None else [m.group(0), *m.groups()])


@pytest.mark.parametrize(
    "pat,s",
    [
        (r"\d+", "a1b22c333"),
        (r"\w+", "héllo wörld, ça va"),
        (r"", "abc"),
        (r"", "éü"),
        (r"[aeiou]", "rhythm"),
        (r"(\d)(\d)", "12 34 5"),
    ],
)
def test_find_all_is_whole_matches(script, pat, s):
    got = run_json(script, f"re.find_all({lit(pat)}, {lit(s)})")
    assert got == [m.group(0) for m in pyre.finditer(pat, s)]


def test_empty_match_after_a_match(script):
    # The regex crate does not report an empty match right after a non-empty one
    # (Python and JavaScript do: ["", "aaa", "", ""]).
    assert run_json(script, 're.find_all("a*", "baaac")') == ["", "aaa", ""]


@pytest.mark.parametrize(
    "pat,s",
    [
        (r"\s*,\s*", "a , b,c ,d"),
        (r",", ",a,,b,"),
        (r"x", "abc"),
        (r"\d", "a1b2c"),
        (r"", "abc"),
        (r"", "é"),
    ],
)
def test_split(script, pat, s):
    got = run_json(script, f"re.split({lit(pat)}, {lit(s)})")
    assert got == pyre.split(pat, s)


@pytest.mark.parametrize(
    "pat,s,rep,expected",
    [
        (r"\d+", "a1b22c", "#", "a#b#c"),
        (r"(\w+)@(\w+)", "bob@home ann@work", "$2:$1", "home:bob work:ann"),
        (r"(\w+)@(\w+)", "bob@home", "${2}x${1}", "homexbob"),
        (r"(?P<first>\w+) (?P<last>\w+)", "Ada Lovelace", "$last, $first", "Lovelace, Ada"),
        (r"a", "banana", "$$", "b$n$n$"),
        (r"x*", "abc", "-", "-a-b-c-"),
        (r"(a)|(b)", "ab", "[$2]", "[][b]"),
        (r"é", "été", "e", "ete"),
        (r"nomatch", "abc", "x", "abc"),
    ],
)
def test_replace(script, pat, s, rep, expected):
    assert run_json(script, f"re.replace({lit(pat)}, {lit(s)}, {lit(rep)})") == expected


def test_bytes_subjects(script):
    # Invalid UTF-8 in the subject is matched bytewise; `.` never matches a bad byte.
    r = script(r'print(re.test("a.b", "a\xffb"), re.test("a", "a\xffb"), len(re.replace("b", "a\xffb", "c")))')
    assert (r.status, r.out) == (0, "false true 3\n"), r
    r = script(r'print(json.stringify(re.match("(a)(.)?", "a\xff")), len(re.split("b", "a\xffbc")))')
    assert (r.status, r.out) == (0, '["a","a",null] 2\n'), r
    # The pattern itself must be text.
    r = script(r're.test("\xff", "x")')
    assert (r.status, r.diag["kind"]) == (1, "value"), r


@pytest.mark.parametrize("pat", ["(", "[a-", "a{2,1}", r"\p{Nope}", "(?<x)", r"(a)\1", "(?=a)", "*"])
def test_bad_patterns_are_value_errors(script, pat):
    r = script(f"re.test({lit(pat)}, \"a\")")
    assert (r.status, r.diag["kind"]) == (1, "value"), r
    assert r.diag["message"].startswith("re.test: bad pattern"), r


def test_bad_pattern_is_catchable(script):
    r = script('try\n  re.match("(", "x")\ncatch e\n  print(e.kind)\nend')
    assert r.out == "value\n"


def test_types(script):
    r = script('re.test(1, "a")')
    assert (r.status, r.diag["kind"]) == (1, "type"), r
    r = script('re.replace("a", "a", nil)')
    assert (r.status, r.diag["kind"]) == (1, "type"), r


# ---------------------------------------------------------------------------
# Bounds
# ---------------------------------------------------------------------------


def test_pattern_length_bound(script):
    r = script('print(re.test(repeat("a", 4096), repeat("a", 4096)))')
    assert (r.status, r.out) == (0, "true\n"), r
    r = script('re.test(repeat("a", 4097), "a")')
    assert (r.status, r.diag["kind"]) == (1, "value"), r
    assert "4097 bytes" in r.diag["message"]


def test_program_size_bound(script):
    # Unicode \w is large: 41 fit in 2 MiB of compiled program, 42 do not.
    r = script(r'print(re.test("\\w{41}", repeat("a", 41)))')
    assert (r.status, r.out) == (0, "true\n"), r
    r = script(r're.test("\\w{42}", repeat("a", 42))')
    assert (r.status, r.diag["kind"]) == (1, "value"), r
    assert "compiles to more than 2097152 bytes" in r.diag["message"], r
    # ASCII classes are small.
    r = script(r'print(re.test("(?-u:\\w){1000}", repeat("a", 1000)), re.test("[a-z]{2000}", repeat("a", 2000)))')
    assert (r.status, r.out) == (0, "true true\n"), r


def test_linear_time(script):
    # The classic catastrophic-backtracking pattern is instant on this engine.
    r = script('print(re.test("(a+)+\\$", repeat("a", 100000) .. "b"))', opts=["--max-time", "5"])
    assert (r.status, r.out) == (0, "false\n"), r


def test_cache_makes_loops_cheap(script):
    code = """
n = 0
for i in range(0, 10000)
  if re.test("^(\\\\d+)-(\\\\w+)\\$", "${i}-x")
    n = n + 1
  end
end
print(n)
"""
    r = script(code, opts=["--max-time", "10"])
    assert (r.status, r.out) == (0, "10000\n"), r


def test_list_bound(script):
    r = script('print(len(re.find_all("a", repeat("a", 16384))), len(re.split("a", repeat("a", 16383))))')
    assert (r.status, r.out) == (0, "16384 16384\n"), r
    r = script('re.find_all("a", repeat("a", 16385))')
    assert (r.status, r.diag["kind"]) == (4, "list"), r
    r = script('re.split("a", repeat("a", 16384))')
    assert (r.status, r.diag["kind"]) == (4, "list"), r


def test_replace_string_bound(script):
    r = script('print(len(re.replace("a", repeat("a", 524288), "bb")))')
    assert (r.status, r.out) == (0, "1048576\n"), r
    r = script('re.replace("a", repeat("a", 524288) .. "a", "bb")')
    assert (r.status, r.diag["kind"]) == (4, "string"), r
