"""Core builtins (SPEC 10, no namespace): results and error kinds."""


# --- output ---------------------------------------------------------------------


# --- place builtins -----------------------------------------------------------------


# --- args / assert --------------------------------------------------------------


def test_sort_matches_reference(script):
    import random

    rnd = random.Random(11)
    alphabet = ["a", "b", "B", "z", "é", "€", "😀", " ", "0", "~"]
    strs = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6))) for _ in range(300)]
    nums = [rnd.choice([rnd.randint(-1000, 1000), rnd.uniform(-1e9, 1e9), rnd.randint(-5, 5) / 4]) for _ in range(300)]
    want_s = sorted(strs, key=lambda s: s.encode())
    want_n = sorted(nums)
    slit = "[" + ", ".join('"' + s + '"' for s in strs) + "]"
    wlit = "[" + ", ".join('"' + s + '"' for s in want_s) + "]"
    nlit = "[" + ", ".join(repr(float(x)) for x in nums) + "]"
    wnlit = "[" + ", ".join(repr(float(x)) for x in want_n) + "]"
    code = f"s = {slit}\nw = {wlit}\nassert(sort(s) == w)\nn = {nlit}\nv = {wnlit}\nassert(sort(n) == v)\nprint(\"ok\")\n"
    r = script(code)
    assert (r.status, r.out) == (0, "ok\n"), r


def test_sort_by_is_stable(script):
    import random

    rnd = random.Random(3)
    rows = [{"k": rnd.randint(0, 5), "i": i} for i in range(400)]
    want = sorted(rows, key=lambda m: m["k"])
    build = "rows = []\n" + "".join(f'push(rows, {{"k": {m["k"]}, "i": {m["i"]}}})\n' for m in rows)
    order = "".join(f"push(want, {m['i']})\n" for m in want)
    code = build + "want = []\n" + order + 'r = sort_by(rows, "k")\nidx = []\nfor m in r\npush(idx, m.i)\nend\nassert(idx == want)\nprint("ok")\n'
    r = script(code)
    assert (r.status, r.out) == (0, "ok\n"), r


def test_eprint_flushes_stdout_first(tmp_path):
    import subprocess

    from conftest import LEASH

    p = subprocess.run(
        [str(LEASH), "-e", 'print("a")\nwrite("b")\neprint("c")\nprint("d")\nx = 1 / 0'],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert p.returncode == 1
    lines = p.stdout.decode().splitlines()
    assert lines[:3] == ["a", "bc", "d"], lines
    assert "runtime error [arith]" in lines[3]


def test_min_max_peek_charges_as_the_call(script):
    # `min`/`max` of up to three numbers are answered in place (their peek); of four
    # they are the call. Numbers charge only the call's base, so the two loops must
    # report the same work and steps, and the results agree with the call's.
    for f in ("min", "max"):
        got = []
        for args in ("i % 9, 3, 4", "i % 9, 3, 4, 4"):
            r = script(f"x = 0\nfor i = 1 to 1000\n  x += {f}({args})\nend\nprint(x)\n", opts=["--stats"])
            assert r.status == 0, r
            st = r.stats
            got.append((r.out, st["work"], st["steps"]))
        assert got[0] == got[1], (f, got)
