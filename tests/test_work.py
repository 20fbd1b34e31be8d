"""The work meter (SPEC 8.1, issue 8): `--max-work`, exact and deterministic, charged by
every builtin's cost rule and by the operators, copies and I/O whose cost grows.

Under the default flags (1,000,000 steps, 2,000,000,000 work) each hostile loop below
would run for minutes to hours on steps alone; the work meter ends it with the `work`
limit. The children are capped (address space, CPU seconds) so that a failing test
cannot take the machine down; no test asserts a time."""
import resource

import pytest

from conftest import run

MIB = 1024 * 1024
CPU_CAP = 60


def capped():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_CAP, CPU_CAP))


def run_capped(args, **kw):
    import subprocess

    from conftest import LEASH, Result

    proc = subprocess.run([str(LEASH)] + [str(a) for a in args], capture_output=True, timeout=120,
                          preexec_fn=capped, input=kw.pop("input", b""), **kw)
    return Result(proc)


def work_of(r):
    return r.stats["work"]


def limit_kind(r):
    assert r.status == 4, r
    return r.diag["kind"]


def prog(*lines):
    return "\n".join(lines) + "\n"


# Each: (name, set-up lines, the line repeated forever). 900 KB strings so that two of
# them fit the 2 MiB frame.
BIG = 'big = repeat("abcdefgh", 115200)'
HOSTILE = [
    ("sort", ["xs = range(16384)"], "ys = sort(reverse(xs))"),
    ("join", ['xs = split(repeat("abcdefg ", 16000), " ")'], 'x = join(xs, ",")'),
    ("replace", [BIG], 't = replace(big, "a", "c")'),
    ("split", ['w = repeat("abcdefg ", 16000)'], 'x = split(w, " ")'),
    ("re.replace", [BIG], 't = re.replace("a", big, "c")'),
    ("upper", [BIG], "t = upper(big)"),
    ("lower", [BIG], "t = lower(big)"),
    ("sha256", [BIG], "t = hash.sha256(big)"),
    ("base64", ['s = repeat("abcdefgh", 65536)'], "t = base64.decode(base64.encode(s))"),
    ("json", ["xs = []", "for i = 1 to 2000", '  push(xs, {a: i, b: "xy"})', "end"],
     "ys = json.parse(json.stringify(xs))"),
    ("csv", ['t = repeat("abc,\\"d,e\\",12\\n", 3000)'], "rows = csv.parse(t)"),
    ("cow copy", ["xs = range(16000)"], "ys = xs\nys[0] = 1"),
    ("== lists", ["xs = range(16384)", "ys = range(16384)"], "t = xs == ys"),
    ("in list", ["xs = range(16384)"], "t = -1 in xs"),
    ("concat", ['s = repeat("ab", 256000)'], "t = s .. s"),
    ("interpolation", ['s = repeat("ab", 256000)'], 't = "${s}${s}"'),
    ("str list", ["xs = range(16384)"], "t = str(xs)"),
    ("find", ['s = repeat("ab", 524288)'], 't = find(s, "zz")'),
    ("in string", ['s = repeat("ab", 524288)'], 't = "zz" in s'),
    ("index_of", ["xs = range(16384)"], "t = index_of(xs, -1)"),
    ("repeat", [], 't = repeat("ab", 500000)'),
    ("chars", ['s = repeat("é", 8000)'], "t = chars(s)"),
    # The most lines a default list holds, a line every two bytes (its worst shape).
    ("lines", ['s = repeat("a\\n", 16000)'], "t = lines(s)"),
]


@pytest.mark.parametrize("name,setup,line", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_loops_end_with_work(tmp_path, name, setup, line):
    p = tmp_path / "h.lsh"
    body = ["  " + l for l in line.splitlines()]
    p.write_text(prog(*setup, "while true", *body, "end"))
    r = run_capped(["--error-format", "json", "--stats", p])
    assert limit_kind(r) == "work", r
    assert work_of(r) == 2_000_000_000
    # Far from the step budget: the work meter, not the steps, stopped it.
    assert r.stats["steps"] < 1_000_000, r.stats


def test_sqlite_work_is_charged(tmp_path):
    r = run_capped(["--error-format", "json", "--stats", "--allow-db", "--max-work", "50000000", "--max-steps",
                    "100000000", "-e", prog(
                        'd = db.open(":memory:")',
                        'db.query(d, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) '
                        'SELECT count(*) FROM c")')], cwd=tmp_path)
    assert limit_kind(r) == "work", r
    assert work_of(r) == 50_000_000


# --- exactness ----------------------------------------------------------------------

EXACT = prog(
    'w = repeat("abc ", 5000)',
    'xs = split(w, " ")',
    "ys = sort(xs)",
    'j = json.parse(json.stringify({a: xs, b: "c"}))',
    "t = upper(w) .. lower(w)",
    'u = "${t}!"',
    "same = xs == ys",
    "zs = xs",
    'zs[0] = "q"',
    'print(len(re.find_all("[a-z]+", w)), same)',
)


def test_work_is_deterministic_and_exact_at_the_budget(tmp_path):
    p = tmp_path / "e.lsh"
    p.write_text(EXACT)
    runs = [run(["--stats", p]) for _ in range(3)]
    works = {work_of(r) for r in runs}
    assert len(works) == 1, works
    w = works.pop()
    assert w > 100_000
    ok = run(["--stats", "--max-work", str(w), p])
    assert ok.status == 0, ok
    assert work_of(ok) == w
    over = run(["--error-format", "json", "--stats", "--max-work", str(w - 1), p])
    assert limit_kind(over) == "work"
    assert work_of(over) == w - 1


def test_a_refused_charge_does_no_work(tmp_path):
    # repeat charges before it builds: refused, nothing is printed after it.
    r = run(["--error-format", "json", "--max-work", "1000", "-e", 'print("a")\nx = repeat("ab", 500000)\nprint("b")'])
    assert limit_kind(r) == "work"
    assert r.out == "a\n"


# --- linearity ----------------------------------------------------------------------

LINEAR = [
    ("upper", 'w = repeat("abcdefgh", N / 8)', "x = upper(w)"),
    ("replace", 'w = repeat("abcdefg ", N / 8)', 'x = replace(w, "a", "bc")'),
    ("split", 'w = repeat("abcdefg ", N / 8)', 'x = split(w, " ")'),
    ("join", 'l = split(repeat("abcdefg ", N / 8), " ")', 'x = join(l, ",")'),
    ("sort", "l = []\nfor i = 1 to N / 8\n  push(l, (i * 7919) % 10007)\nend", "x = sort(l)"),
    ("json.parse", 't = json.stringify(split(repeat("abcdefg ", N / 8), " "))', "x = json.parse(t)"),
    ("json.stringify", 'l = split(repeat("abcdefg ", N / 8), " ")', "x = json.stringify(l)"),
    ("csv.parse", 't = repeat("abc,\\"d,e\\",12\\n", int(N / 14))', "x = csv.parse(t)"),
    ("lines", 'w = repeat("abcdefg\\n", N / 8)', "x = lines(w)"),
    ("re.find_all", 'w = repeat("abcdefg ", N / 8)', 'x = re.find_all("[a-z]+", w)'),
    ("sha256", 'w = repeat("abcdefgh", N / 8)', "x = hash.sha256(w)"),
    ("base64", 'w = repeat("abcdefgh", N / 8)', "x = base64.encode(w)"),
    ("concat", 'w = repeat("abcdefgh", N / 8)', "x = w .. w"),
    ("== lists", "l = range(N / 8)\nm = range(N / 8)", "x = l == m"),
    ("str", "l = range(N / 8)", "x = str(l)"),
    ("cow copy", "l = range(N / 8)", "m = l\nm[0] = 1"),
    ("find", 'w = repeat("abcdefgh", N / 8)', 'x = find(w, "zz")'),
]


def extra_work(setup, line, n):
    base = run(["--stats", "-e", f"N = {n}\n{setup}\n"])
    full = run(["--stats", "-e", f"N = {n}\n{setup}\n{line}\n"])
    assert base.status == 0 and full.status == 0, (base, full)
    return work_of(full) - work_of(base)


@pytest.mark.parametrize("name,setup,line", LINEAR, ids=[x[0] for x in LINEAR])
def test_doubling_the_input_doubles_the_work(name, setup, line):
    w1 = extra_work(setup, line, 32768)
    w2 = extra_work(setup, line, 65536)
    assert w1 > 0, name
    assert 1.6 <= w2 / w1 <= 2.4, (name, w1, w2)


# --- the limit's nature ---------------------------------------------------------------


def test_try_cannot_catch_work():
    r = run(["--error-format", "json", "--max-work", "1000", "-e",
             prog("try", '  x = repeat("ab", 500000)', "catch e", '  print("caught")', "end")])
    assert limit_kind(r) == "work"
    assert "caught" not in r.out


def test_each_test_gets_a_fresh_work_budget(tmp_path):
    body = "\n".join(
        f'fn test_{i}()\n  x = upper(repeat("abcdefgh", 100000))\nend' for i in range(3))
    (tmp_path / "w_test.lsh").write_text(body + "\n")
    one = run(["--stats", "-e", 'x = upper(repeat("abcdefgh", 100000))'])
    w = work_of(one)
    # Each test's work fits the budget; the three together would not.
    r = run(["test", "--max-work", str(w + 1000), tmp_path / "w_test.lsh"])
    assert r.status == 0, r
    assert "3 passed, 0 failed" in r.out
    r = run(["test", "--max-work", str(w // 2), tmp_path / "w_test.lsh"])
    assert r.status != 0, r


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "1.5", "10000000000001", ""])
def test_max_work_range_is_a_usage_error(bad):
    r = run(["--error-format", "json", "--max-work", bad, "-e", "x = 1"])
    assert r.status == 2, r
    assert "--max-work" in r.err


def test_max_work_bounds_accepted():
    for good in ["1", "10000000000000"]:
        r = run(["--max-work", good, "-e", "x = 1"])
        assert r.status == 0, r


def test_stats_report_work():
    r = run(["--stats", "-e", 'x = upper("abc")'])
    assert r.status == 0
    assert r.stats["work"] > 0


def test_steps_stay_one_per_line():
    r = run(["--stats", "-e", prog('s = repeat("ab", 100000)', "t = upper(s) .. lower(s)", "u = sort(range(1000))")])
    assert r.stats["steps"] == 3, r.stats
