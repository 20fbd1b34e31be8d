"""Round-3 builtins (SPEC 10): `repeat(list, n)`, `concat`, `extend`, `byte`, `byte_at`,
`tr`, `count(s, sub)`, the `bit` namespace and the `utf8` namespace: results, errors,
limits at N and N+1, and for each a hostile call (the most work and memory one call can
do) that ends within its budgets with a limit, never a crash."""
import resource
import subprocess

import pytest

from conftest import LEASH, Result, caught, err_of, lines_of

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


def test_list_builtins(ok):
    code = lines_of(
        "print(repeat([0], 5), repeat([1, 2], 2), repeat([], 9), repeat([1], 0), repeat(\"ab\", 3))",
        "print(concat([1], [2, 3], []), concat([1]), concat([], []))",
        "xs = [1]",
        "extend(xs, [2, 3])",
        "m = {l: []}",
        "extend(m.l, xs)",
        "extend(m.l, [])",
        "ys = xs",
        "extend(ys, [4])",  # copy-on-write: xs is unchanged
        "print(xs, m, ys)",
        "grid = repeat([repeat([0], 2)], 2)",
        "grid[0][0] = 1",  # value semantics: rows are not shared
        "print(grid)",
    )
    assert ok(code) == (
        '[0,0,0,0,0] [1,2,1,2] [] [] ababab\n[1,2,3] [1] []\n'
        '[1,2,3] {"l":[1,2,3]} [1,2,3,4]\n[[1,0],[0,0]]\n'
    )


@pytest.mark.parametrize(
    "code,kind",
    [
        ('x = repeat({}, 2)', "type"),
        ('x = repeat([1], -1)', "value"),
        ('x = repeat([1], 1.5)', "value"),
        ('x = concat([1], 2)', "type"),
        ('x = concat("a", [1])', "type"),
        ('x = 1\nextend(x, [1])', "type"),
        ('x = []\nextend(x, "ab")', "type"),
    ],
)
def test_list_builtin_errors(script, code, kind):
    r = script(code + "\n")
    assert r.status == 1 and r.diag["kind"] == kind, r


def test_list_builtin_load_errors(fails):
    fails("x = concat()\n", "arity", status=3)
    fails("extend([1], [2])\n", "syntax", status=3)  # the first argument is a place
    fails("x = repeat([1])\n", "arity", status=3)


def test_repeat_list_limit_n_and_n_plus_1(script):
    assert script("x = repeat([1, 2], 8192)\nprint(len(x))\n").out == "16384\n"
    r = script("x = repeat([1, 2], 8193)\n")
    assert r.status == 4 and r.diag["kind"] == "list", r


def test_concat_limit_n_and_n_plus_1(script):
    assert script("x = concat(range(8192), range(8192))\nprint(len(x))\n").out == "16384\n"
    r = script("x = concat(range(8192), range(8193))\n")
    assert r.status == 4 and r.diag["kind"] == "list", r


def test_extend_limit_n_and_n_plus_1(script):
    assert script("x = range(8192)\nextend(x, range(8192))\nprint(len(x))\n").out == "16384\n"
    r = script("x = range(8192)\nextend(x, range(8193))\nprint(len(x))\n")
    assert r.status == 4 and r.diag["kind"] == "list", r


def test_repeat_list_hostile_memory_is_refused(script):
    # 16,384 copies of a 1 MiB string: shared, but accounted in every place (SPEC 8):
    # the frame-storage bound refuses the value before it is kept.
    code = 's = repeat("x", 1048576)\nxs = repeat([s], 16384)\nprint(len(xs))\n'
    r, st = stats(script, code)
    assert r.status == 4 and r.diag["kind"] in {"frame_storage", "memory"}, r


def test_list_builtins_hostile_work(script):
    # The most items one call produces (the list limit), with the work charged before.
    r, st = stats(script, "x = repeat([1], 16384)\n")
    assert r.status == 0 and st["work"] >= 16384 * 8, (r, st)
    r, st = stats(script, "x = repeat([1], 16384)\n", "--max-work", str(16384 * 8))
    assert r.status == 4 and r.diag["kind"] == "work", r
    r, st = stats(script, "a = range(8192)\nx = concat(a, a)\n", "--max-work", str(16384 * 8))
    assert r.status == 4 and r.diag["kind"] == "work", r
    r, st = stats(script, "a = range(16384)\nx = []\nextend(x, a)\n", "--max-work", str(16384 * 4))
    assert r.status == 4 and r.diag["kind"] == "work", r


# ---------------------------------------------------------------------------
# Bytes: byte, byte_at, tr, count(s, sub)
# ---------------------------------------------------------------------------


def test_byte_builtins(ok):
    code = lines_of(
        'print(byte(65), len(byte(200)), byte_at("ABC", 0), byte_at("ABC", -1), byte_at(byte(255), 0))',
        'print(utf8.valid(byte(200)), byte(0) == "\\0")',
        'print(tr("GATTACA", "ACGT", "TGCA"), tr("hello", "l", ""), tr("abc", "aa", "xy"), tr("", "a", "b"))',
        'print(tr("a-b_c", "-_", " "), tr(byte(200) .. "x", byte(200), "y"))',
        'print(count("banana", "an"), count("aaaa", "aa"), count("abc", ""), count("", "a"), count("abc", "abcd"))',
        "print(count([1, 2, 1], fn(x) => x == 1))",
    )
    assert ok(code) == "A 1 65 67 255\nfalse true\nCTAATGT heo ybc \na bc yx\n2 2 4 0 0\n2\n"


def test_reverse_complement_idiom(ok):
    # The case that motivated tr: a per-byte map lookup in one call.
    code = 'dna = "ATGCGTAC"\nprint(reverse(tr(dna, "ACGT", "TGCA")))\n'
    assert ok(code) == "GTACGCAT\n"


@pytest.mark.parametrize(
    "stmt,kind,needle",
    [
        ("x = byte(256)", "value", "0..255"),
        ("x = byte(-1)", "value", "0..255"),
        ("x = byte(1.5)", "value", "integer"),
        ('x = byte("a")', "type", "number"),
        ('x = byte_at("abc", 3)', "index", "byte_at"),
        ('x = byte_at("abc", -4)', "index", "byte_at"),
        ('x = byte_at("", 0)', "index", "byte_at"),
        ('x = byte_at([1], 0)', "type", "string"),
        ('x = tr("a", "a", "bc")', "value", "longer"),
        ('x = tr(1, "a", "b")', "type", "string"),
        ('x = count(5, "a")', "type", "list or a string"),
        ('x = count("a", 5)', "type", "string"),
        ('x = count([1], "a")', "type", "function"),
    ],
)
def test_byte_builtin_errors(script, stmt, kind, needle):
    kind_got, msg = err_of(script(caught(stmt)))
    assert kind_got == kind and needle in msg, (kind_got, msg)


def test_byte_at_n_and_n_plus_1(ok, script):
    assert ok('s = repeat("a", 1048575) .. "b"\nprint(byte_at(s, 1048575), byte_at(s, -1048576))\n') == "98 97\n"
    kind, _ = err_of(script('s = repeat("a", 1048576)\n' + caught("x = byte_at(s, 1048576)")))
    assert kind == "index"


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


def test_bit_results(ok):
    assert ok("print(bit.band(12, 10), bit.bor(12, 10), bit.bxor(12, 10), bit.bnot(0), bit.bnot(-1))\n") == "8 14 6 -1 0\n"
    assert ok("print(bit.lshift(1, 10), bit.rshift(1024, 3), bit.arshift(-16, 2), bit.rshift(-1, 11))\n") == (
        "1024 128 -4 9007199254740991\n"
    )
    assert ok("print(bit.band(-1, 255), bit.bor(-256, 255), bit.lshift(1, 53), bit.lshift(-1, 53))\n") == (
        "255 -1 9007199254740992 -9007199254740992\n"
    )
    assert ok("print(bit.rshift(5, 64), bit.arshift(-5, 100), bit.arshift(5, 100), bit.lshift(3, 64))\n") == "0 -1 0 0\n"
    assert ok("print(bit.band(0xFF00, 0x0FF0), bit.bxor(9007199254740992, 0))\n") == "3840 9007199254740992\n"


@pytest.mark.parametrize(
    "stmt,kind",
    [
        ("x = bit.lshift(1, 54)", "arith"),  # 2^54: past 2^53
        ("x = bit.rshift(-1, 10)", "arith"),  # 2^54 - 1 as unsigned
        ("x = bit.bor(9007199254740992, 1)", "arith"),  # 2^53 + 1
        ("x = bit.band(9007199254740994, 1)", "value"),  # operand past 2^53
        ("x = bit.band(-9007199254740994, 1)", "value"),
        ("x = bit.band(1.5, 1)", "value"),
        ('x = bit.band("1", 1)', "type"),
        ("x = bit.lshift(1, -1)", "value"),
        ("x = bit.lshift(1, 0.5)", "value"),
    ],
)
def test_bit_errors(script, stmt, kind):
    got, msg = err_of(script(caught(stmt)))
    assert got == kind and msg.startswith("bit."), (got, msg)


def test_bit_range_n_and_n_plus_1(ok, script):
    # The edges of the operand range: 2^53 is in, 2^53 + 2 (the next number) is out.
    assert ok("print(bit.band(9007199254740992, -1), bit.band(-9007199254740992, -1))\n") == (
        "9007199254740992 -9007199254740992\n"
    )
    assert err_of(script(caught("x = bit.band(9007199254740994, -1)")))[0] == "value"
    assert ok("print(bit.lshift(1, 53))\n") == "9007199254740992\n"
    assert err_of(script(caught("x = bit.lshift(1, 54)")))[0] == "arith"


def test_bit_is_a_reserved_namespace(fails):
    fails("bit = 1\n", "name", status=3)
    fails("utf8 = 1\n", "name", status=3)
    fails("x = bit.nope(1)\n", "name", status=3)
    fails("x = bit.band(1)\n", "arity", status=3)


def test_bit_hostile_work_is_constant(script):
    r, st = stats(script, "x = bit.band(9007199254740992, -9007199254740992)\n")
    assert r.status == 0 and st["work"] < 200, st


# ---------------------------------------------------------------------------
# utf8
# ---------------------------------------------------------------------------


def test_utf8_builtins(ok):
    code = lines_of(
        'print(len("Zoë"), utf8.len("Zoë"), utf8.len(""), utf8.len("日本語"))',
        'print(utf8.sub("Zoë!", 1, 3), utf8.sub("Zoë", -1), utf8.sub("Zoë", 0, -1), utf8.sub("Zoë", 5), utf8.sub("Zoë", 2, 1))',
        'print(utf8.sub("Zoë", -10, 10), utf8.sub("😀x", 0, 1))',
        'print(utf8.valid("Zoë"), utf8.valid(byte(200)), utf8.valid(""), utf8.valid(slice("ë", 0, 1)))',
        'print(utf8.width("日本a"), utf8.width("é"), utf8.width("e\\u{301}"), utf8.width(""), utf8.width("a\\tb"))',
        'print(utf8.codes("Zoë"), utf8.codes(""), utf8.codes("😀"))',
    )
    assert ok(code) == (
        "4 3 0 3\noë ë Zo  \nZoë 😀\ntrue false true false\n5 1 1 0 2\n[90,111,235] [] [128512]\n"
    )


@pytest.mark.parametrize("name", ["utf8.len(s)", "utf8.sub(s, 0)", "utf8.width(s)", "utf8.codes(s)"])
def test_utf8_invalid_is_a_value_error(script, name):
    got, msg = err_of(script('s = "ab" .. byte(200)\n' + caught(f"x = {name}")))
    assert got == "value" and "UTF-8" in msg and "index 2" in msg, msg


def test_utf8_sub_errors(script):
    assert err_of(script(caught('x = utf8.sub("abc", 0.5)')))[0] == "value"
    assert err_of(script(caught('x = utf8.sub("abc", "1")')))[0] == "type"
    assert err_of(script(caught("x = utf8.len(5)")))[0] == "type"


def test_utf8_codes_limit_n_and_n_plus_1(script):
    # 16,384 code points fit a list; one more is the list limit.
    r = script('s = repeat("é", 16384)\nprint(len(utf8.codes(s)))\n')
    assert r.out == "16384\n", r
    r = script('s = repeat("é", 16385)\nx = utf8.codes(s)\n')
    assert r.status == 4 and r.diag["kind"] == "list", r


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
