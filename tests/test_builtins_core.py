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
