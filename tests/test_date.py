"""date.now / date.parse / date.format / date.parts on chrono."""
import calendar
import datetime as dt
import json
import time

import pytest


def out(script, code):
    r = script(code)
    assert r.status == 0, r
    return r.out


def epoch(y, mo, d, h=0, mi=0, s=0):
    return calendar.timegm((y, mo, d, h, mi, s))


def test_now(script):
    before = time.time()
    t = float(out(script, "print(date.now())"))
    assert before - 1 <= t <= time.time() + 1


@pytest.mark.parametrize(
    "text,expected",
    [
        ("2024-02-29T12:34:56Z", epoch(2024, 2, 29, 12, 34, 56)),
        ("2024-02-29t12:34:56z", epoch(2024, 2, 29, 12, 34, 56)),
        ("2024-02-29T14:34:56+02:00", epoch(2024, 2, 29, 12, 34, 56)),
        ("2024-02-29T07:04:56-05:30", epoch(2024, 2, 29, 12, 34, 56)),
        ("2024-02-29T12:34:56.5Z", epoch(2024, 2, 29, 12, 34, 56) + 0.5),
        ("2024-02-29T12:34:56.250+00:00", epoch(2024, 2, 29, 12, 34, 56) + 0.25),
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31T23:59:59Z", -1),
        ("2000-02-29T00:00:00Z", epoch(2000, 2, 29)),
        ("0001-01-01T00:00:00Z", -62135596800),
        ("9999-12-31T23:59:59Z", 253402300799),
    ],
)
def test_parse_rfc3339(script, text, expected):
    assert float(out(script, f'print(date.parse("{text}"))')) == expected


def test_fractional_seconds_keep_precision(script):
    got = out(script, 'print(date.parse("2024-02-29T12:34:56.123456Z") - 1709210096)')
    assert abs(float(got) - 0.123456) < 1e-6


@pytest.mark.parametrize(
    "text",
    [
        "2024-02-30T00:00:00Z",  # no such day
        "2023-02-29T00:00:00Z",  # not a leap year
        "1900-02-29T00:00:00Z",  # century, not a leap year
        "2024-13-01T00:00:00Z",
        "2024-04-31T00:00:00Z",
        "2024-01-01T24:00:01Z",
        "2024-01-01T12:60:00Z",
        "2024-01-01T12",  # an hour alone
        "2024-01-01T12:00:00+2",  # a one-digit offset
        "20240101",  # ISO 8601 basic format: not one of the forms SPEC 10 lists
        "2024-01-01T12:00:00Z junk",
        "",
        "yesterday",
        "\\xff",
    ],
)
def test_parse_refuses(script, text):
    r = script(f'date.parse("{text}")')
    assert (r.status, r.diag["kind"]) == (1, "parse"), r


@pytest.mark.parametrize(
    "text,fmt,expected",
    [
        ("2024-02-29", "%Y-%m-%d", epoch(2024, 2, 29)),
        ("29/02/2024 12:34", "%d/%m/%Y %H:%M", epoch(2024, 2, 29, 12, 34)),
        ("2024-02-29 14:34:56 +0200", "%Y-%m-%d %H:%M:%S %z", epoch(2024, 2, 29, 12, 34, 56)),
        ("Thu, 29 Feb 2024 12:34:56 GMT", "%a, %d %b %Y %H:%M:%S GMT", epoch(2024, 2, 29, 12, 34, 56)),
        ("1709210096", "%s", 1709210096),
        ("2024-060", "%Y-%j", epoch(2024, 2, 29)),
        ("12:34:56.5 2024-02-29", "%H:%M:%S%.f %Y-%m-%d", epoch(2024, 2, 29, 12, 34, 56) + 0.5),
    ],
)
def test_parse_with_format(script, text, fmt, expected):
    assert float(out(script, f'print(date.parse("{text}", "{fmt}"))')) == expected


@pytest.mark.parametrize(
    "text,fmt,kind",
    [
        ("2024-02-30", "%Y-%m-%d", "parse"),
        ("2023-02-29", "%Y-%m-%d", "parse"),
        ("12:34", "%H:%M", "parse"),  # no date
        ("2024-02-29x", "%Y-%m-%d", "parse"),
        ("2024-02-29", "%Y-%m-%Q", "value"),  # unknown specifier
        ("2024-02-29", "%Y-%m-%", "value"),  # incomplete specifier
    ],
)
def test_parse_with_format_refuses(script, text, fmt, kind):
    r = script(f'date.parse("{text}", "{fmt}")')
    assert (r.status, r.diag["kind"]) == (1, kind), r


@pytest.mark.parametrize(
    "t,rest,expected",
    [
        (0, "", "1970-01-01T00:00:00Z"),
        (1709210096, "", "2024-02-29T12:34:56Z"),
        (1709210096.5, "", "2024-02-29T12:34:56.5Z"),
        (1709210096.123, "", "2024-02-29T12:34:56.123Z"),
        (1709210096.000001, "", "2024-02-29T12:34:56.000001Z"),
        (-0.5, "", "1969-12-31T23:59:59.5Z"),
        (1709210096, ", nil, 3600", "2024-02-29T13:34:56+01:00"),
        (1709210096, ", nil, -19800", "2024-02-29T07:04:56-05:30"),
        (1709164800, ", nil, -1", "2024-02-28T23:59:59-00:00:01"),  # replaced below
        (1709210096, ', "%Y/%m/%d %H:%M"', "2024/02/29 12:34"),
        (1709210096, ', "%A %B %-d %Y, %I:%M %p"', "Thursday February 29 2024, 12:34 PM"),
        (1709210096, ', "%Y-%m-%dT%H:%M:%S%:z", 19800', "2024-02-29T18:04:56+05:30"),
        (1709210096, ', "%H:%M:%S %::z", -86399', "12:34:57 -23:59:59"),
        (1709210096, ', "%H:%M %z", 1830', "13:05 +0031"),  # %z rounds to the minute
        (1709210096.25, ', "%S%.3f"', "56.250"),
        (1709210096, ', "%s %j %u %%"', "1709210096 060 4 %"),
        (1709164799, ', "%Y-%m-%d", 3600', "2024-02-29"),
        (1709164800, ', "%Y-%m-%d", -3600', "2024-02-28"),
    ],
)
def test_format(script, t, rest, expected):
    if rest == ", nil, -1":
        # RFC 3339 has no seconds in offsets: the default format refuses one.
        r = script(f"date.format({t}{rest})")
        assert (r.status, r.diag["kind"]) == (1, "value"), r
        return
    assert out(script, f"print(date.format({t}{rest}))") == expected + "\n"


def test_format_then_parse_round_trips(script):
    code = """
for t in [0, 951782400, 1709210096.5, -2208988800, 4102444800.25, 1e11]
  for off in [0, 3600, -34200, 50400]
    s = date.format(t, nil, off)
    assert_eq(date.parse(s), t, s)
  end
end
print("ok")
"""
    assert out(script, code) == "ok\n"


@pytest.mark.parametrize(
    "args,kind",
    [
        ('"x"', "type"),
        ("0, 5", "type"),
        ('0, "%Q"', "value"),
        ('0, "%"', "value"),
        ('0, nil, 86400', "value"),
        ('0, nil, -86400', "value"),
        ('0, nil, 1.5', "value"),
        ("1e13", "value"),
        ("-1e13", "value"),
    ],
)
def test_format_refuses(script, args, kind):
    r = script(f"date.format({args})")
    assert (r.status, r.diag["kind"]) == (1, kind), r


def test_offset_bound(script):
    # -86399..86399 at N; N+1 refused (above).
    assert out(script, 'print(date.format(0, "%::z", 86399), date.format(0, "%::z", -86399))') == "+23:59:59 -23:59:59\n"


def test_parts(script):
    r = out(
        script,
        """
print(date.parts(1709210096))
print(date.parts(1709210096.75).second)
print(date.parts(0, -3600))
print(date.parts(date.parse("2024-12-31T23:30:00Z"), 3600))
""",
    )
    lines = r.splitlines()
    assert json.loads(lines[0]) == {
        "year": 2024, "month": 2, "day": 29, "hour": 12, "minute": 34, "second": 56, "weekday": 4,
    }
    assert lines[1] == "56.75"
    assert json.loads(lines[2]) == {
        "year": 1969, "month": 12, "day": 31, "hour": 23, "minute": 0, "second": 0, "weekday": 3,
    }
    assert json.loads(lines[3])["year"] == 2025 and json.loads(lines[3])["weekday"] == 3


def test_parts_weekdays_and_leap_years(script):
    days = [epoch(2024, 1, d) for d in range(1, 8)] + [epoch(y, 2, 28) + 86400 for y in (2000, 1900, 2023, 2024)]
    r = out(script, "for t in " + json.dumps(days) + "\n  p = date.parts(t)\n  print(p.month, p.day, p.weekday)\nend")
    expected = [f"1 {d} {dt.date(2024, 1, d).isoweekday()}" for d in range(1, 8)]
    expected += ["2 29 2", "3 1 4", "3 1 3", "2 29 4"]
    assert r.splitlines() == expected


def test_errors_are_catchable(script):
    r = script('try\n  date.parse("2024-02-30T00:00:00Z")\ncatch e\n  print(e.kind)\nend')
    assert r.out == "parse\n"
