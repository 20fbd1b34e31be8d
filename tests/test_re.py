"""re.test / re.match / re.find_all / re.replace / re.split on a linear-time engine."""
import json


def test_bytes_subjects(script):
    # Invalid UTF-8 in the subject is matched bytewise; `.` never matches a bad byte.
    r = script(r'print(re.test("a.b", "a\xffb"), re.test("a", "a\xffb"), len(re.replace("b", "a\xffb", "c")))')
    assert (r.status, r.out) == (0, "false true 3\n"), r
    r = script(r'print(json.stringify(re.match("(a)(.)?", "a\xff")), len(re.split("b", "a\xffbc")))')
    assert (r.status, r.out) == (0, '["a","a",null] 2\n'), r
    # The pattern itself must be text.
    r = script(r're.test("\xff", "x")')
    assert (r.status, r.diag["kind"]) == (1, "value"), r


# ---------------------------------------------------------------------------
# Bounds
# ---------------------------------------------------------------------------


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
