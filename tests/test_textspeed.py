"""The text-processing fast paths (issue 12, WORKLOG 2026-12-02): `get` on a map looked
up in place (Expr::MapGet), a map's insert after a `get` of the same key (the look-up
hint), `split` counting its pieces first, and the counting idiom
`m[k] = get(m, k, d) + n` stored with one look-up (StmtKind::CountIndex). Each must give the results, errors, steps,
work and accounted storage of the general path; the limits below were measured with the
binary from before the change (N passes, N - 1 fails, at the same line)."""

from conftest import lines_of

GET_SCRIPT = lines_of(
    "m = {}",
    "for i = 1 to 40",
    '  m["k" .. i] = i',
    "end",
    'k = "k7"',
    'd = "default"',
    "x = get(m, k, d)",
    'y = get(m, "nope", d)',
    "print(x, y)",
)

SPLIT_SCRIPT = lines_of(
    's = repeat("ab,", 300)',
    'xs = split(s, ",")',
    'ys = split(s, "b,", 100)',
    "print(len(xs), len(ys))",
)


def test_get_fast_path_limits_unchanged(script):
    # call_args: a builtin's arguments (the map, the key and the default, 4,440 accounted
    # bytes on line 7) are shared, never counted (SPEC 8, round 3, issue 25)
    one = "\n".join(GET_SCRIPT.splitlines()[:7]) + "\nprint(x)\n"
    assert script(one, opts=["--limit", "call_args=4440"]).status == 0
    r = script(one, opts=["--limit", "call_args=1"])
    assert r.status == 0, r
    # work: 907 units in all (the builtin's constant charge, as the call made it)
    r = script(GET_SCRIPT, opts=["--max-work", "907", "--stats"])
    assert r.status == 0 and r.out == "7 default\n", r
    assert r.stats["work"] == 907 and r.stats["steps"] == 87
    assert r.stats["peak_frame_bytes"] == 4541
    r = script(GET_SCRIPT, opts=["--max-work", "906"])
    assert r.status == 4 and r.diag["kind"] == "work" and r.diag["line"] == 9, r
    assert script(GET_SCRIPT, opts=["--limit", "frame_storage=4541"]).status == 0
    r = script(GET_SCRIPT, opts=["--limit", "frame_storage=4540"])
    assert r.status == 4 and r.diag["kind"] == "frame_storage" and r.diag["line"] == 8, r


def test_get_fast_path_charges_like_a_call(script):
    # `get` and `len` both charge the constant call work: the two runs cost the same.
    base = lines_of('m = {a: 1, b: 2}', 'k = "a"', "for i = 1 to 100", "  x = {}(m, k, 0)", "end")
    a = script(base.replace("{}(m, k, 0)", "get(m, k, 0)"), opts=["--stats"])
    b = script(base.replace("{}(m, k, 0)", "len(m)"), opts=["--stats"])
    assert a.status == 0 and b.status == 0
    assert a.stats["work"] == b.stats["work"] and a.stats["steps"] == b.stats["steps"]


def test_split_limits_unchanged(script):
    # 301 and 101 pieces: the list limit, and the accounted storage of lists built at
    # their pushed capacity (28,709 bytes at the peak, as before). The work: 35,221
    # until split's rule went from 85 to 50 units a piece (2026-12-06, bench/work.py
    # "split (one-byte pieces)"): 402 pieces x 35 less.
    r = script(SPLIT_SCRIPT, opts=["--stats"])
    assert r.status == 0 and r.out == "301 101\n", r
    assert r.stats["peak_frame_bytes"] == 28709 and r.stats["work"] == 35221 - 402 * 35 and r.stats["steps"] == 4
    assert script(SPLIT_SCRIPT, opts=["--limit", "list=301"]).status == 0
    r = script(SPLIT_SCRIPT, opts=["--limit", "list=300"])
    assert r.status == 4 and r.diag["kind"] == "list" and r.diag["line"] == 2, r
    assert script(SPLIT_SCRIPT, opts=["--limit", "frame_storage=28709"]).status == 0
    r = script(SPLIT_SCRIPT, opts=["--limit", "frame_storage=28708"])
    assert r.status == 4 and r.diag["kind"] == "frame_storage" and r.diag["line"] == 3, r


# ---------------------------------------------------------------------------
# The counting idiom, m[k] = get(m, k, d) + n (StmtKind::CountIndex): stored in place
# when k holds a number in an unshared map; otherwise (and for every error) the general
# path. `+ one` (a variable) is the same statement without the fast path.
# ---------------------------------------------------------------------------

COUNT_SCRIPT = lines_of(
    "counts = {}",
    "one = 1",
    "seen = {}",
    "for r = 1 to 30",
    '  for w in split("b a b é b a  é c" .. (r % 7), " ")',
    "    counts[w] = get(counts, w, 0) + 1",
    '    seen.n = get(seen, "n", 100) - 2',
    "  end",
    "end",
    "print(counts, seen)",
)


def test_count_idiom_results_and_charges_equal_the_general_path(script):
    fast = script(COUNT_SCRIPT, opts=["--stats"])
    slow = script(COUNT_SCRIPT.replace("+ 1", "+ one").replace("- 2", "- one - one"), opts=["--stats"])
    assert fast.status == 0 and slow.status == 0, (fast, slow)
    assert fast.out == slow.out
    assert fast.out.startswith('{"b":90,"a":60,"é":60,"":30,"c1":5,'), fast.out
    assert '{"n":-440}' in fast.out  # 100 - 2 x 9 words x 30 rounds
    for k in ("steps", "work", "peak_frame_bytes"):
        assert fast.stats[k] == slow.stats[k], k


def test_count_idiom_work_and_storage_limits_at_the_same_spot(script):
    fast = script(COUNT_SCRIPT, opts=["--stats"]).stats
    slow_src = COUNT_SCRIPT.replace("+ 1", "+ one")
    for opts, kind in ((["--max-work", str(fast["work"])], None),
                       (["--max-work", str(fast["work"] - 1)], "work"),
                       (["--limit", f"frame_storage={fast['peak_frame_bytes']}"], None),
                       (["--limit", f"frame_storage={fast['peak_frame_bytes'] - 1}"], "frame_storage"),
                       (["--max-steps", str(fast["steps"] - 1)], "steps")):
        a, b = script(COUNT_SCRIPT, opts=opts), script(slow_src, opts=opts)
        if kind is None:
            assert a.status == 0 and b.status == 0, (opts, a, b)
        else:
            assert a.status == 4 and a.diag["kind"] == kind, (opts, a)
            assert (a.diag["line"], a.diag.get("column")) == (b.diag["line"], b.diag.get("column")), (a.diag, b.diag)
