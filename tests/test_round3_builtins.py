"""Round-3 builtins (SPEC 10): `repeat(list, n)`, `concat`, `extend`, `byte`, `byte_at`,
`tr`, `count(s, sub)`, the `bit` namespace and the `utf8` namespace: results, errors,
limits at N and N+1, and for each a hostile call (the most work and memory one call can
do) that ends within its budgets with a limit, never a crash."""
import resource
import subprocess


from conftest import LEASH, Result

MIB = 1024 * 1024


def capped():
    # A child that could allocate without bound is capped (the leash should stop it first).
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def stats(script, code, *opts, tmp=None):
    """Run `code` with --stats in a child capped by RLIMIT_AS: (result, stats)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/t.lsh"
        with open(path, "w") as f:
            f.write(code)
        proc = subprocess.run(
            # Two 1 MiB strings (argument and result) need more than the default frame.
            [str(LEASH), "--error-format", "json", "--stats", "--limit", "frame_storage=8M", *opts, path],
            capture_output=True, timeout=60, preexec_fn=capped, cwd=d,
        )
    r = Result(proc)
    return r, (r.stats if '"stats"' in r.err else None)


# ---------------------------------------------------------------------------
# Lists: repeat, concat, extend
# ---------------------------------------------------------------------------


def test_repeat_list_hostile_memory_is_refused(script):
    # 16,384 copies of a 1 MiB string: shared, but accounted in every place (SPEC 8):
    # the frame-storage bound refuses the value before it is kept.
    code = 's = repeat("x", 1048576)\nxs = repeat([s], 16384)\nprint(len(xs))\n'
    r, st = stats(script, code)
    assert r.status == 4 and r.diag["kind"] in {"frame_storage", "memory"}, r


def test_list_builtins_hostile_work(script):
    # The most items one call produces (the list limit), with the work charged before
    # (UTILITIES.md: repeat 6 an item, concat 5, extend 4).
    r, st = stats(script, "x = repeat([1], 16384)\n")
    assert r.status == 0 and st["work"] >= 16384 * 6, (r, st)
    r, st = stats(script, "x = repeat([1], 16384)\n", "--max-work", str(16384 * 6))
    assert r.status == 4 and r.diag["kind"] == "work", r
    r, st = stats(script, "a = range(8192)\nx = concat(a, a)\n", "--max-work", str(16384 * 5))
    assert r.status == 4 and r.diag["kind"] == "work", r
    r, st = stats(script, "a = range(16384)\nx = []\nextend(x, a)\n", "--max-work", str(16384 * 4))
    assert r.status == 4 and r.diag["kind"] == "work", r


# ---------------------------------------------------------------------------
# Bytes: byte, byte_at, tr, count(s, sub)
# ---------------------------------------------------------------------------


def test_tr_hostile_work(script):
    # The longest string (1 MiB): charged 1.25 a byte before the pass.
    code = 's = repeat("ACGT", 262144)\nx = tr(s, "ACGT", "TGCA")\nprint(len(x))\n'
    r, st = stats(script, code)
    assert r.status == 0 and r.out == "1048576\n" and st["work"] >= 1.25 * MIB, (r, st)
    r, _ = stats(script, code, "--max-work", str(MIB))
    assert r.status == 4 and r.diag["kind"] == "work", r


def test_count_hostile_work(script):
    # Most matches one call can find: every other byte of 1 MiB.
    code = 's = repeat("a", 1048576)\nprint(count(s, "aa"))\n'
    r, st = stats(script, code)
    assert r.status == 0 and r.out == "524288\n", r
    assert st["work"] >= 524288 * 8, st
    r, _ = stats(script, code, "--max-work", str(524288 * 8))
    assert r.status == 4 and r.diag["kind"] == "work", r


# ---------------------------------------------------------------------------
# bit
# ---------------------------------------------------------------------------


def test_bit_hostile_work_is_constant(script):
    r, st = stats(script, "x = bit.band(9007199254740992, -9007199254740992)\n")
    assert r.status == 0 and st["work"] < 200, st


# ---------------------------------------------------------------------------
# utf8
# ---------------------------------------------------------------------------


def test_utf8_hostile_work(script):
    # The longest string (1 MiB of 4-byte characters) read whole by each.
    setup = 's = repeat("😀", 262144)\n'
    for call, rate in [("utf8.len(s)", 0.875), ("utf8.width(s)", 1.5), ("utf8.sub(s, 1, -1)", 0.625), ("utf8.valid(s)", 0.75)]:
        r, st = stats(script, setup + f"x = {call}\n")
        assert r.status == 0 and st["work"] >= rate * MIB, (call, r, st)
        r, _ = stats(script, setup + f"x = {call}\n", "--max-work", str(int(rate * MIB)))
        assert r.status == 4 and r.diag["kind"] == "work", (call, r)
    r, _ = stats(script, setup + "x = utf8.codes(s)\n")
    assert r.status == 4 and r.diag["kind"] == "list", r
