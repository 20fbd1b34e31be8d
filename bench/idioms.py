#!/usr/bin/env python3
"""Instructions an iteration of common one-line shapes cost, in one or more Leash builds.

Usage: bench/idioms.py [--leash BIN[@CORE]]... [NAME ...]

Each shape is a line (or a few) of ordinary script code (`s ..= "x"`, `push(xs, i)`,
`for k, v in m`, `m[k] += 1`, ...) run 100,000 times in a function's `for` loop. Valgrind's
callgrind counts the instructions of the whole run under each build given (default:
target/release/leash); the same loop with the body `x = i` is subtracted, and the
difference is divided by the iterations. With two builds the last column is the ratio
of the second to the first: which shapes a change made cheaper or dearer. `@CORE` sets
`LEASH_CORE` for a build from before the fourteenth session, which had the tree
evaluator beside the compiled core (`BIN@tree`, WORKLOG 2026-12-05, thirteenth session).
Counts, not time: stalls do not show, so confirm a change with `bench/ab.py`.
"""
import argparse, os, re, subprocess, sys, tempfile

# (name, set-up lines, loop body): the body runs in `for i = 1 to 100000` inside `main`.
SHAPES = [
    ("base", "", "x = i"),
    ("append", 's = ""', 's ..= "x"'),
    ("cat", 'x = ""', 'x = "a" .. i'),
    ("str", 'x = ""', "x = str(i)"),
    ("eqstr", 's = "abc"', 'if s == "abd"\nx = 1\nend'),
    ("substr", 's = "hello world"', "x = s[i % 5]"),
    ("lenstr", 's = "abc"', "x = len(s)"),
    ("not", "a = true", "a = not a"),
    ("andor", "x = 0\ny = 5", "if i > 0 and y < 10\nx += 1\nend"),
    ("floor", "x = 0", "x = floor(i / 3)"),
    ("minmax", "x = 0", "x = max(x, i % 7)"),
    ("call", "x = 0", "x = id(i)"),
    ("idx", "xs = [1, 2, 3, 4]", "x = xs[i % 4]"),
    ("len", "xs = [1, 2, 3, 4]", "x = len(xs)"),
    ("push", "xs = []", "push(xs, i)"),
    ("pushf", "m = {items: []}", "push(m.items, i)"),
    ("mklist", "x = nil", "x = [i, 2, 3]"),
    ("mkmap", "x = nil", "x = {x: i, y: 2}"),
    ("join", 'xs = ["a", "b", "c"]', 'x = join(xs, ",")'),
    ("set2", "g = [[0, 0], [0, 0]]", "g[i % 2][1] = i"),
    ("field2", "m = {f: {g: 1}}", "x = m.f.g"),
    ("fieldset", "p = {x: 0, y: 0}", "p.x = i"),
    ("fieldinc", "p = {x: 0, y: 0}", "p.x += 1"),
    ("inmap", "m = {a: 1, b: 2}", 'x = "a" in m'),
    ("inmapk", 'm = {a: 1, b: 2}\nk = "b"', "if k in m\nx = 1\nend"),
    ("getd", "m = {a: 1}", 'x = get(m, "b", 0)'),
    ("count", 'm = {}\nks = ["a", "b", "c", "d"]', "k = ks[i % 4]\nm[k] = get(m, k, 0) + 1"),
    ("countinc", 'm = {a: 0, b: 0, c: 0, d: 0}\nks = ["a", "b", "c", "d"]', "k = ks[i % 4]\nm[k] += 1"),
    ("setstr", 'm = {}\nv = "val"', 'm["k" .. (i % 100)] = v'),
    ("forin0", "xs = []", "for v in xs\nx = v\nend"),
    ("forin", "xs = [1, 2, 3, 4]", "for v in xs\nx = v\nend"),
    ("formap", "m = {a: 1, b: 2}", "for k, v in m\nx = v\nend"),
]

FLAGS = ["--allow-files", "--max-steps", "1000000000", "--max-work", "100000000000", "--limit", "all=max"]


def program(setup, body):
    return f"fn id(v)\n  return v\nend\nfn main()\n{setup}\nfor i = 1 to 100000\n{body}\nend\nend\nmain()\n"


def instructions(leash, path, core):
    env = dict(os.environ)
    if core:
        env["LEASH_CORE"] = core
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", leash] + FLAGS + [path],
                       capture_output=True, text=True, env=env)
    m = re.search(r"refs:\s+([\d,]+)", r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"{path} on {leash}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leash", action="append", default=[], help="a build, BIN or BIN@CORE (repeatable)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    builds = a.leash or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "leash")]
    confs = [tuple(b.split("@", 1)) if "@" in b else (b, None) for b in builds]
    shapes = [s for s in SHAPES if s[0] == "base" or not a.names or s[0] in a.names]
    counts = {}
    with tempfile.TemporaryDirectory() as d:
        for name, setup, body in shapes:
            p = os.path.join(d, name + ".lsh")
            with open(p, "w") as f:
                f.write(program(setup, body))
            counts[name] = [instructions(b, p, c) for b, c in confs]
    base = counts["base"]
    heads = [os.path.basename(b) + (f"@{c}" if c else "") for b, c in confs]
    ratio = len(confs) == 2
    print("| shape | " + " | ".join(heads) + (" | second / first |" if ratio else " |"))
    print("|---|" + "---:|" * (len(confs) + ratio))
    for name, _, body in shapes:
        if name == "base":
            continue
        per = [(counts[name][i] - base[i]) / 100000 for i in range(len(confs))]
        shown = body.replace("\n", "; ")
        cells = " | ".join(f"{x:.0f}" for x in per)
        extra = f" | {per[1] / per[0] if per[0] > 0 else 0:.2f}" if ratio else ""
        print(f"| {name} `{shown}` | {cells}{extra} |")


if __name__ == "__main__":
    main()
