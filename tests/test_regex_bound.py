"""Regular expressions whose cost is pattern size times subject length (issue 8, issue 10
item 11, SPEC 8.1): charged before they run, bounded inside, deterministic.

The lazy DFA thrashes on these patterns (a new DFA state for nearly every byte) and gives
up after a fixed number of cache clears; the PikeVM that takes over is charged bytes x
pattern positions before it runs, and is not started when it would end past --max-time.
Before, `re.test("a[ab]{1280}[^ab]", 1 MiB of random a/b)` ran 11 s of CPU for a charge
of 4 ms, and `re.test("[a-z]{3000}[0-9]", 1 MiB)` over 20 s.

The children are capped (address space, and CPU seconds: a run that overshot would be
killed by SIGXCPU instead of ending with exit 4), so no test asserts a time."""
import resource
import subprocess

import pytest

from conftest import LEASH, Result

CPU_CAP = 20


def capped(cpu=CPU_CAP):
    def f():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    return f


def run_capped(args, cpu=CPU_CAP):
    proc = subprocess.run([str(LEASH)] + [str(a) for a in args], capture_output=True, timeout=120,
                          preexec_fn=capped(cpu), input=b"")
    return Result(proc)


def prog(*lines):
    return "\n".join(lines) + "\n"


# N bytes of random a/b: a random 4 KiB block repeated (the DFA state of a[ab]{k} depends
# on the last k+1 bytes, so for k in the hundreds every 4 KiB window is a new state).
def ab_random(n):
    return [
        "rand.seed(7)",
        'b = ""',
        "for j = 1 to 4096",
        "  if rand.int(0, 1) == 0",
        '    b = b .. "a"',
        "  else",
        '    b = b .. "b"',
        "  end",
        "end",
        f"w = repeat(b, {n // 4096})",
    ]


MIB = 1024 * 1024
HOSTILE = [
    ("thrash", ab_random(MIB), 'x = re.test("a[ab]{1280}[^ab]", w)'),
    ("long class run", ['w = repeat("a", 1048576)'], 'x = re.test("[a-z]{3000}[0-9]", w)'),
    ("find_all thrash", ab_random(MIB), 'x = re.find_all("a[ab]{1280}[^ab]", w)'),
    ("replace thrash", ab_random(MIB), 'x = re.replace("a[ab]{1280}[^ab]", w, "")'),
    ("split thrash", ab_random(MIB), 'x = re.split("a[ab]{1280}[^ab]", w)'),
    ("match thrash", ab_random(MIB), 'x = re.match("(a[ab]{1280})[^ab]", w)'),
    # every find rescans to the end (the higher-priority branch outlives each match)
    ("rescan", ['w = repeat("a", 1048576)'], 'x = re.replace("[ab]*c|a", w, "")'),
    # a big NFA (no lazy DFA fits the cache): always the NFA simulation
    ("big nfa", ['w = repeat("a", 1048576)'], 'x = re.test("\\\\w{40}", w)'),
    # the lazy DFA gives up, then every find of the iteration rescans to the end on the
    # NFA simulation (before 2026-12-02 only the first of those was charged)
    ("nfa rescan replace", ab_random(MIB), 'x = re.replace("a[ab]{1280}[ab]*c|a", w, "")'),
    ("nfa rescan find_all", ab_random(MIB), 'x = re.find_all("(?:a[ab]{1280}[ab]*c)|b", w)'),
    # many matches while the DFA thrashes
    ("many matches thrash", ab_random(MIB), 'x = re.replace("a[ab]{200}", w, "")'),
    # capture groups over a match of the whole subject, charged at the PikeVM's rate when
    # the capture engine's quick search gives up (an alternation per two bytes: more
    # frames than it may hold); see test_captures_on_a_long_match_are_cheap for the path
    # without backtracking
    ("captures over many choices", ab_random(MIB), 'x = len(re.match("(a[ab]{500}(?:ab|ba|aa|bb)+)", w)[1])'),
    # the lazy DFA walks every byte (no thrashing, no rescan): before 2026-12-02 its pass
    # was charged 0.05 a byte, and this loop ran about 90 s within the default work
    ("dfa walk", ['w = repeat("a", 1048576)'], 'x = re.test("(a|aa)*b", w)'),
    ("dfa walk anchored", ['w = repeat("a", 1048576)'], 'x = re.test("^(a|aa)*b", w)'),
    # re.match of an anchored pattern: the capture engine's own search first, then the DFA
    ("match anchored walk", ['w = repeat("a", 1048576)'], 'x = re.match("^(a|aa)*(b)", w)'),
]


@pytest.mark.parametrize("name,setup,line", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_regex_ends_with_work(tmp_path, name, setup, line):
    p = tmp_path / "h.lsh"
    p.write_text(prog(*setup, "while true", "  " + line, "end"))
    r = run_capped(["--error-format", "json", "--stats", p])
    assert r.status == 4, r
    assert r.diag["kind"] == "work", r


@pytest.mark.parametrize("name,setup,line", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_regex_meets_the_deadline(tmp_path, name, setup, line):
    """With work to spare, the deadline ends it (the CPU cap of 5 s would kill a run
    that went on: the PikeVM alone would need 10 s and more)."""
    p = tmp_path / "h.lsh"
    p.write_text(prog(*setup, "while true", "  " + line, "end"))
    r = run_capped(["--error-format", "json", "--stats", "--max-work", "10000000000000", "--max-time", "1", p],
                   cpu=5)
    assert r.status == 4, r
    assert r.diag["kind"] == "time", r


def test_captures_on_a_long_match_are_cheap(tmp_path):
    """Groups over a 1 MiB match that the capture engine's quick search finds without
    backtracking: charged its step budget (about 4 units a subject byte), not the PikeVM's
    rate (8 a byte per pattern position: 4 billion here, which made this a hostile case
    until 2026-12-02). Holding the 2 MiB of groups then meets the frame-storage limit."""
    p = tmp_path / "h.lsh"
    p.write_text(prog(*ab_random(MIB), "while true", '  x = re.match("(a[ab]{500}[ab]*)", w)', "end"))
    r = run_capped(["--error-format", "json", "--stats", p], cpu=5)
    assert r.status == 4, r
    assert r.diag["kind"] == "frame_storage", r
    stats = [d for d in r.json_lines() if "stats" in d][0]["stats"]
    assert stats["work"] < 50_000_000, stats


def test_captures_charged_by_the_quick_search_steps(tmp_path):
    """Groups of small matches found by the capture engine's quick search are charged 30
    plus 2 per step it took (2026-12-05), not its whole budget (the program, twice the
    span and 64 steps: 176 units for a two-byte match), exactly and the same every run;
    a quick search that gives up is still charged its whole budget before the slower
    searches run (the hostile cases above end with `work`)."""
    p = tmp_path / "q.lsh"
    n = 20000
    p.write_text(prog(f'w = repeat("abcdefg ", {n})', 'x = re.replace("b(c)", w, "$1$1")', "print(len(x))"))
    base = tmp_path / "b.lsh"
    base.write_text(prog(f'w = repeat("abcdefg ", {n})', 'x = re.replace("bc", w, "cc")', "print(len(x))"))
    a, b, plain = run_capped(["--stats", p]), run_capped(["--stats", p]), run_capped(["--stats", base])
    assert a.status == 0 and a.out == f"{8 * n}\n", a
    assert plain.status == 0 and plain.out == f"{8 * n}\n", plain
    w = a.stats["work"]
    assert b.stats["work"] == w
    groups = (w - plain.stats["work"]) / n  # what the groups of one match were charged
    assert 30 < groups < 100, (groups, w, plain.stats["work"])
    at = run_capped(["--stats", "--max-work", w, p])
    assert at.status == 0, at
    below = run_capped(["--error-format", "json", "--stats", "--max-work", w - 1, p])
    assert below.status == 4 and below.diag["kind"] == "work", below


FALLBACK = prog(
    *ab_random(65536),
    'print(re.test("a[ab]{400}[^ab]", w))',
    'print(len(re.find_all("a[ab]{300}", w)))',
    'u = repeat("h\u00e9llo w\u00f6rld ", 2000)',
    'print(len(re.find_all("\\\\b\\\\w+\\\\b", u)))',
    'print(len(re.replace("(\\\\w)(\\\\w+)", u, "$2$1")))',
)


def test_fallback_work_is_exact_and_deterministic(tmp_path):
    p = tmp_path / "f.lsh"
    p.write_text(FALLBACK)
    a = run_capped(["--stats", p])
    b = run_capped(["--stats", p])
    assert a.status == 0, a
    assert a.out == "false\n217\n4000\n28000\n", a
    w = a.stats["work"]
    assert b.stats["work"] == w
    # well past the lazy DFA's pass: the PikeVM was charged
    assert w > 100_000_000, w
    at = run_capped(["--stats", "--max-work", w, p])
    assert at.status == 0, at
    below = run_capped(["--error-format", "json", "--stats", "--max-work", w - 1, p])
    assert below.status == 4 and below.diag["kind"] == "work", below


def test_compiles_are_charged(tmp_path):
    """Seventeen big patterns in turn miss the 16-entry cache of compiled patterns every
    time (about 15 ms each); the compile is charged, so the loop ends with `work`."""
    p = tmp_path / "c.lsh"
    p.write_text(prog("i = 0", "while true", '  x = re.test("\\\\w{40}|x" .. str(i % 17), "")', "  i = i + 1", "end"))
    r = run_capped(["--error-format", "json", "--stats", "--max-work", "500000000", p])
    assert r.status == 4 and r.diag["kind"] == "work", r
    assert r.stats["steps"] < 400, r.stats


ORDINARY = prog(
    'w = repeat("h\u00e9llo w\u00f6rld ", 3000)',
    'print(len(re.replace("\\\\w+", w, "x")), len(re.replace("\\\\b\\\\w+\\\\b", w, "y")), re.test("w\u00f6rld[0-9]", w))',
    'print(len(re.split("\\\\s+", w)))',
    'print(re.match("(h\\\\w+) (?<w>w\\\\w+)", w))',
    'print(re.replace("(?<w>w\\\\w+)", "h\u00e9llo w\u00f6rld", "[$w/${1}x/$$]"))',
    'print(re.split("", "h\u00e9llo"), re.find_all("", "\u00e9"), re.replace("", "\u00e9a", "-"))',
    'print(re.find_all("(?i)\u00c9", "\u00e9\u00c9e"), re.test("^\\\\w+$", "h\u00e9llo"), re.match("(a)|(b)", "b"))',
    'print(re.find_all("a*", "baaab"), re.split("x*", "axb"), re.replace("(?m)^", "a\\nb", "> "))',
)


def test_ordinary_results_unchanged(tmp_path):
    """What the `regex` crate's engine gave for these (recorded before the change)."""
    p = tmp_path / "o.lsh"
    p.write_text(ORDINARY)
    r = run_capped([p])
    assert r.status == 0, r
    assert r.out.splitlines() == [
        "12000 12000 false",
        "6001",
        '["h\u00e9llo w\u00f6rld","h\u00e9llo","w\u00f6rld"]',
        "h\u00e9llo [w\u00f6rld/1x/$]",
        '["","h","\u00e9","l","l","o",""] ["",""] -\u00e9-a-',
        '["\u00e9","\u00c9"] true ["b",null,"b"]',
        '["","aaa",""] ["","a","b",""] > a',
        "> b",
    ]


def test_empty_subject_and_pattern():
    # Found by the fuzz smoke run: an empty match at the end of an empty subject made the
    # next search's span start past its end (a subtraction that overflowed in builds with
    # overflow checks). Results as the regex crate gives them.
    r = run_capped(["-e", 'print(re.find_all("", ""), re.split("", ""), re.replace("", "", "x"), re.test("", ""), re.match("", ""))'])
    assert r.status == 0, r.err
    assert r.out == '[""] ["",""] x true [""]\n'


# A call history that goes through the NFA simulation's rescans and finishes: 8 KiB of
# random a/b, every find after the DFA gave up rescanning to the end.
SIM_EXACT = prog(
    *ab_random(8192),
    'print(len(re.replace("a[ab]{1280}[ab]*c|a", w, "")))',
    'print(len(re.find_all("(?:a[ab]{1280}[ab]*c)|b", w)))',
    'print(re.test("\\\\w{40}x", repeat("\u00e9", 4000)))',
)


def test_simulation_work_is_exact_and_deterministic(tmp_path):
    p = tmp_path / "s.lsh"
    p.write_text(SIM_EXACT)
    a = run_capped(["--stats", p])
    b = run_capped(["--stats", p])
    assert a.status == 0, a
    assert a.out.splitlines()[2] == "false", a
    w = a.stats["work"]
    assert b.stats["work"] == w and a.out == b.out
    at = run_capped(["--stats", "--max-work", w, p])
    assert at.status == 0, at
    below = run_capped(["--error-format", "json", "--stats", "--max-work", w - 1, p])
    assert below.status == 4 and below.diag["kind"] == "work", below
