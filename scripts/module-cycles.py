#!/usr/bin/env python3
"""Import check: the dependency graph between the crate's top-level modules, and its cycles.

A top-level module is a file or directory directly under src/ (`interp`, `builtins`,
`value`, ...). Module A depends on module B when a file of A names `crate::B` (in a `use`
line, a `use crate::{B, ...}` group, or a path written inline such as
`crate::B::f(...)`), or `super::B` from a file directly inside a directory module.
Comments and the crate roots (lib.rs, main.rs, src/bin/) are ignored: the roots only
declare the modules.

The strongly connected components of that graph with more than one module are its
cycles. The script prints each component, its modules, and for each edge inside it one
place that creates it (file:line), so that a cycle can be cut where it is thin.

    python3 scripts/module-cycles.py             print the graph's cycles; exit 0
    python3 scripts/module-cycles.py --check     also exit 1 when a cycle is not allowed by
                                                 scripts/module-cycles.allowed (CI)
    python3 scripts/module-cycles.py --write-allowed   record today's cycles as allowed
    python3 scripts/module-cycles.py --graph     print every edge (A -> B  file:line)

scripts/module-cycles.allowed lists the cycles that exist today, one component a line
(its modules, sorted, space-separated). `--check` fails when a component is not within
one allowed line: a new cycle, or an old one that grew a module. Cutting a cycle never
fails the check; shrink the allowed file when it happens (`--write-allowed`). The goal
(issue 24) is an empty file.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
ALLOWED = pathlib.Path(__file__).resolve().parent / "module-cycles.allowed"

CRATE_PATH = re.compile(r"\bcrate::(\{[^}]*\}|[a-z_][a-z0-9_]*)")
SUPER_PATH = re.compile(r"\bsuper::(\{[^}]*\}|[a-z_][a-z0-9_]*)")
GROUP_ITEM = re.compile(r"(?:^|[{,])\s*([a-z_][a-z0-9_]*)")


def strip_comments(text):
    """Remove // comments and /* */ blocks, keep line numbers; strings are left alone
    except that a `//` inside a string literal ends nothing (a crude string skip)."""
    out = []
    in_block = 0
    for line in text.split("\n"):
        res = []
        i = 0
        in_str = False
        while i < len(line):
            c = line[i]
            if in_block:
                if line.startswith("*/", i):
                    in_block -= 1
                    i += 2
                    continue
                if line.startswith("/*", i):
                    in_block += 1
                    i += 2
                    continue
                i += 1
                continue
            if in_str:
                res.append(c)
                if c == "\\":
                    if i + 1 < len(line):
                        res.append(line[i + 1])
                    i += 2
                    continue
                if c == '"':
                    in_str = False
                i += 1
                continue
            if c == '"':
                in_str = True
                res.append(c)
                i += 1
                continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block += 1
                i += 2
                continue
            res.append(c)
            i += 1
        out.append("".join(res))
    return out


def top_modules():
    mods = set()
    for p in SRC.iterdir():
        if p.is_file() and p.suffix == ".rs" and p.stem not in ("lib", "main"):
            mods.add(p.stem)
        elif p.is_dir() and p.name != "bin":
            mods.add(p.name)
    return mods


def module_of(path):
    """(top-level module, whether `super::` from this file names the crate root)."""
    rel = path.relative_to(SRC).parts
    if len(rel) == 1:
        return rel[0][:-3], True
    # src/builtins/mod.rs: super is the crate root; src/builtins/re.rs: super is builtins;
    # src/builtins/re/capture.rs: super is builtins::re (inside builtins).
    return rel[0], len(rel) == 2 and rel[1] == "mod.rs"


def names_in(match):
    g = match.group(1)
    if g.startswith("{"):
        return GROUP_ITEM.findall(g)
    return [g]


def edges():
    """{(a, b): (file, line)}: the first place where module a names module b."""
    mods = top_modules()
    found = {}
    for path in sorted(SRC.rglob("*.rs")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "bin" or len(rel.parts) == 1 and rel.stem in ("lib", "main"):
            continue
        mod, super_is_root = module_of(path)
        lines = strip_comments(path.read_text(encoding="utf-8"))
        # A `use crate::{...}` group may span lines: join each statement that opens a
        # brace after crate:: until it closes.
        text = "\n".join(lines)
        for pat, applies in ((CRATE_PATH, True), (SUPER_PATH, super_is_root)):
            if not applies:
                continue
            for m in pat.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                for name in names_in(m):
                    if name in mods and name != mod:
                        found.setdefault((mod, name), ("src/" + str(rel), line))
    return mods, found


def components(mods, found):
    """Tarjan's strongly connected components, each sorted; only those of 2+ modules."""
    graph = {m: sorted(b for (a, b) in found if a == m) for m in mods}
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for m in sorted(mods):
        if m not in index:
            visit(m)
    return sorted(comps, key=lambda c: (-len(c), c))


def short_cycles(comp, inner):
    """The elementary cycles of 2 and 3 modules inside a component, each once."""
    e = set(inner)
    out = []
    for a in comp:
        for b in comp:
            if a < b and (a, b) in e and (b, a) in e:
                out.append([a, b])
    for a in comp:
        for b in comp:
            for c in comp:
                if a < b and a < c and b != c and (a, b) in e and (b, c) in e and (c, a) in e:
                    if [a, b, c] not in out:
                        out.append([a, b, c])
    return out


def read_allowed():
    if not ALLOWED.exists():
        return []
    out = []
    for line in ALLOWED.read_text().splitlines():
        line = line.split("#", 1)[0].split()
        if line:
            out.append(set(line))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a cycle is not covered by scripts/module-cycles.allowed")
    ap.add_argument("--write-allowed", action="store_true",
                    help="record today's cycles in scripts/module-cycles.allowed")
    ap.add_argument("--graph", action="store_true", help="print every edge")
    ap.add_argument("--src", metavar="DIR", help="the crate's src directory (default: ours)")
    ap.add_argument("--allowed", metavar="FILE", help="the allowed-cycles file "
                    "(default: scripts/module-cycles.allowed)")
    opts = ap.parse_args()
    global SRC, ALLOWED
    if opts.src:
        SRC = pathlib.Path(opts.src).resolve()
    if opts.allowed:
        ALLOWED = pathlib.Path(opts.allowed).resolve()

    mods, found = edges()
    comps = components(mods, found)
    if opts.graph:
        for (a, b), (f, l) in sorted(found.items()):
            print("%s -> %s  %s:%d" % (a, b, f, l))
        print()
    print("module graph: %d top-level modules, %d edges; %d cycle(s) (strongly connected "
          "components of more than one module)" % (len(mods), len(found), len(comps)))
    for i, comp in enumerate(comps, 1):
        inner = sorted((a, b) for (a, b) in found if a in comp and b in comp)
        print("cycle %d: %d modules: %s" % (i, len(comp), " ".join(comp)))
        for a, b in inner:
            f, l = found[(a, b)]
            print("    %s -> %s  (%s:%d)" % (a, b, f, l))
        short = short_cycles(comp, inner)
        if short:
            print("  its short cycles (2 or 3 modules; cutting one edge of each helps most):")
            for c in short:
                print("    " + " -> ".join(c + [c[0]]))
    if opts.write_allowed:
        ALLOWED.write_text(
            "# Module cycles allowed by scripts/module-cycles.py --check (one strongly connected\n"
            "# component a line). Written by --write-allowed; the goal is an empty file.\n"
            + "".join(" ".join(c) + "\n" for c in comps))
        print("wrote %s" % ALLOWED)
    if opts.check:
        allowed = read_allowed()
        bad = [c for c in comps if not any(set(c) <= a for a in allowed)]
        if bad:
            for c in bad:
                print("NEW CYCLE (not in %s): %s" % (ALLOWED.name, " ".join(c)))
            return 1
        print("check: every cycle is within one allowed in %s" % ALLOWED.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
