"""The everyday builtins of issue 13 (SPEC 10): fmt, clock, sleep (bounded by
--max-time and the `sleep` limit), is_main, and round at every magnitude."""
import json
import math

import pytest

from conftest import run


def lit(s):
    if s is True or s is False:
        return "true" if s else "false"
    if s is None:
        return "nil"
    return json.dumps(s, ensure_ascii=False).replace("$", "\\$")


# ---------------------------------------------------------------------------
# fmt: every conversion, flag, width and precision, against Python's % (C's printf)
# ---------------------------------------------------------------------------

NUMS = [0, 1, -1, 7, 42, -42, 255, 1000000, 3.14159, -2.5, 0.000123456, 123456789.0, 1e-10, 6.02e23, 0.5]
SPECS = ["", "5", "-8", "08", "+", " ", "+09", "-+7", ".0", ".3", "10.2", "-12.4", "012.3", "+.1", " 010.5"]


@pytest.mark.parametrize("conv", ["f", "e", "g"])
def test_fmt_floats_match_c(script, conv):
    fmts = [f"%{s}{conv}" for s in SPECS]
    code = "\n".join(f"print(fmt({lit(f)}, {x!r}))" for f in fmts for x in NUMS)
    r = script(code)
    assert r.status == 0, r
    want = [f % x for f in fmts for x in NUMS]
    assert r.out.splitlines() == want


def test_fmt_type_of_format_and_limits(fails, ok):
    fails("x = fmt(1)", "type")
    fails("x = fmt()", "arity", status=3)
    # The result is a string: past its limit, the string limit (at N it fits).
    assert ok('x = fmt("%1048576s", "")\nprint(len(x))') == "1048576\n"
    fails('x = fmt("%1048577s", "")', "string", status=4)
    fails('x = fmt("%1048576s%s", "", "a")', "string", status=4)
    fails('x = fmt("%.2000000f", 1)', "string", status=4)
    # Work: a byte of the result is a unit, charged as it is produced.
    fails('x = fmt("%1000000s", "")', "work", status=4, opts=["--max-work", "500000"])


@pytest.mark.parametrize("conv", ["f", "e", "g"])
@pytest.mark.parametrize("prec", [1099, 1100, 1101, 65535, 65536, 220283, 1048000])
def test_fmt_huge_precision_matches_c(script, conv, prec):
    # Found by the fmt fuzz target: a precision above u16::MAX made Rust's formatter
    # panic (exit 70). Every digit past a binary64's exact expansion is a zero.
    vals = [-11222, 0.1, 5e-324, 1.7976931348623157e308, 0]
    code = "\n".join(f"print(fmt({lit('%+.' + str(prec) + conv)}, {x!r}))" for x in vals)
    r = script(code)
    assert r.status == 0, r
    assert r.out.splitlines() == [("%+." + str(prec) + conv) % x for x in vals]


# ---------------------------------------------------------------------------
# clock, sleep
# ---------------------------------------------------------------------------


def test_sleep_ends_at_the_deadline_with_time(fails):
    # Asked for the whole sleep limit (N = 60 s): allowed, so it waits until --max-time
    # and stops with the time limit (the subprocess timeout bounds the test, not a clock).
    r = fails("sleep(60)", "time", status=4, opts=["--max-time", "0.3"], timeout=20)
    assert r.out == ""


def test_sleep_limit_at_n_plus_one(fails):
    # N + 1: more than the sleep limit in one call is refused before any waiting.
    r = fails("sleep(60.001)", "sleep", status=4, timeout=20)
    assert "sleep limit" in r.diag["message"]
    # Over the run: 0.05 s then 59.95 s is the limit exactly (waits, ends at the deadline)...
    fails("sleep(0.05)\nsleep(59.95)", "time", status=4, opts=["--max-time", "0.4"], timeout=20)
    # ... and 0.05 s then 59.96 s is past it.
    fails("sleep(0.05)\nsleep(59.96)", "sleep", status=4, timeout=20)


def test_sleep_limit_cannot_be_caught_or_dodged(fails):
    fails('try\n  sleep(61)\ncatch e\n  print("caught")\nend', "sleep", status=4, timeout=20)
    # Many small sleeps add up (each asks 20 s; the fourth is past 60 s).
    r = fails("for i = 1 to 10\n  sleep(20)\nend", "time", status=4, opts=["--max-time", "0.2"], timeout=20)
    assert r.diag["kind"] == "time"


# ---------------------------------------------------------------------------
# is_main
# ---------------------------------------------------------------------------


def test_is_main_in_main_include_and_test(tmp_path):
    (tmp_path / "lib.lsh").write_text(
        'print("lib top", is_main())\nfn lib_fn()\n  return is_main()\nend\n')
    (tmp_path / "main.lsh").write_text(
        'include "lib.lsh"\nfn main_fn()\n  return is_main()\nend\n'
        'print("main top", is_main())\nprint("main fn", main_fn())\nprint("lib fn", lib_fn())\n'
        'if is_main()\n  print("guarded part runs")\nend\n')
    r = run(["main.lsh"], cwd=tmp_path)
    assert (r.status, r.out) == (0, "lib top false\nmain top true\nmain fn true\nlib fn false\nguarded part runs\n"), r
    # The entry script included by a test file: its main part stays guarded.
    (tmp_path / "main_test.lsh").write_text(
        'include "main.lsh"\nfn test_guard()\n  assert_eq(is_main(), false)\n  assert_eq(main_fn(), false)\nend\n')
    r = run(["test", "main_test.lsh"], cwd=tmp_path)
    assert r.status == 0, r
    assert "guarded part runs" not in r.out and "main top false" in r.out, r.out
    assert r.out.splitlines()[-1] == "1 passed, 0 failed", r
    # -e and stdin programs are entry scripts too.
    assert run(["-e", "print(is_main())"]).out == "true\n"
    assert run(["-"], input="print(is_main())\n").out == "true\n"


# ---------------------------------------------------------------------------
# round at every magnitude
# ---------------------------------------------------------------------------


def test_round_at_every_magnitude(script):
    xs = [sign * m * 10.0 ** k for k in range(-320, 309, 3) for m in (1.0, 1.2345678901234567, 9.87654321)
          for sign in (1, -1)]
    xs = [x for x in xs if math.isfinite(x)]
    ds = [0, 1, 2, 3, 6, 10, 15, 20, -1, -3, -10]
    code = "xs = json.parse(stdin.read(1000000))\nds = [%s]\nout = []\nfor x in xs\n  for d in ds\n" \
           "    push(out, round(x, d))\n  end\nend\nprint(json.stringify(out))" % ", ".join(map(str, ds))
    r = script(code, input=json.dumps(xs))
    assert r.status == 0, r
    got = json.loads(r.out)
    i = 0
    for x in xs:
        for d in ds:
            y = float(got[i])
            i += 1
            assert math.isfinite(y), (x, d, y)
            scale = 10.0 ** d
            if abs(x) * scale >= 2.0 ** 52:
                assert y == x, (x, d, y)  # already integral at that many digits
                continue
            # Within half a unit of the last digit (plus a few ulps of slack), and an
            # integral count of those units.
            unit = 10.0 ** -d
            assert abs(y - x) <= unit / 2 * (1 + 1e-9) + 4 * math.ulp(x), (x, d, y)
            k = y * scale if d >= 0 else y / unit
            assert abs(k - round(k)) <= 1e-6 * max(1.0, abs(k)), (x, d, y)
