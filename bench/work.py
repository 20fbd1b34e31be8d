#!/usr/bin/python3
"""Calibrate the work meter (SPEC 8.1): nanoseconds of CPU per work unit, per cost rule.

    /usr/bin/python3 bench/work.py [--reps N] [--only NAME[,NAME..]] [--markdown] [--leash PATH]

For every cost rule (each builtin whose work grows with its input, and the operators,
copies and I/O the meter charges) it runs a Leash loop that repeats the operation K
times on an input of size S, at three sizes, and once more with K = 0 (the same set-up,
no loop). The difference gives the CPU time and the work of the K operations; the slope
between the smallest and the largest size gives nanoseconds per work unit with the
per-iteration cost of the loop line itself (charged as a step, not as work) cancelled
out. Each figure is the minimum CPU time (user + sys, from wait4) over --reps runs.

A work unit is meant to be about one nanosecond: every rule should land within 0.5 to
2 ns per unit. A rule is set by its worst input shape (the row that costs most a unit);
a row of a cheaper, typical shape of the same rule names that row (`set_by`) and must
only not be under-charged (at most 2 ns per unit): a rule charged by sizes alone cannot
be in the band for both `find` of an absent word (memchr, 0.01 ns a unit) and its
worst case (0.9). The table is printed (Markdown with --markdown, for bench/README.md);
the exit status is 1 when a rule's worst row is outside the band or any row is over 2.
Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)

# (name, set-up lines using N, the operation, sizes N, iterations K). The set-up runs
# in both the measured run and the K = 0 run; only the loop differs.
WORDS = 'w = repeat("abcdefg ", N / 8)'
# N bytes of random a and b (a random 4 KiB block repeated)
ABRAND = ('rand.seed(7)\nb = ""\nfor j = 1 to 4096\n  if rand.int(0, 1) == 0\n    b = b .. "a"\n  else\n'
          '    b = b .. "b"\n  end\nend\nw = repeat(b, N / 4096)')
# N distinct strings (each its own shared box) in shuffled order: the worst list to copy,
# reverse or drop (a count changed in a box per item, the boxes scattered in memory); a
# list of numbers copies plain 16-byte values and is the typical shape of the same rules.
STRS = ('rand.seed(7)\nl = []\nfor j = 1 to N\n  push(l, "s" .. j)\nend\nl = rand.shuffle(l)')
STRS_HALF = STRS.replace("to N", "to N / 2")
# A typical-shape row of a rule set by another row (see the module notes).
def set_by(row):
    return {"set_by": row}
CASES = [
    # strings
    ("upper", 'w = repeat("abcdefgh", N / 8)', "x = upper(w)", [65536, 262144, 917504], 300),
    ("lower", 'w = repeat("ABCDEFGH", N / 8)', "x = lower(w)", [65536, 262144, 917504], 300),
    ("trim", 'w = " " .. repeat("abcdefgh", N / 8) .. " "', "x = trim(w)", [65536, 262144, 917504], 300),
    ("replace", WORDS, 'x = replace(w, "a", "bc")', [65536, 262144, 786432], 200),
    # A one-byte text is found by `memchr`, a longer one by a searcher (twenty-ninth
    # session): both shapes measured; the one-byte text is the dearer per unit.
    ("replace (two-byte text)", WORDS, 'x = replace(w, "g ", "bc")', [65536, 262144, 786432], 200, set_by("replace")),
    ("find", WORDS, 'x = find(w, "zq")', [65536, 262144, 917504], 2000, set_by("find (memmem worst case)")),
    # Worst input shapes (issue 23): each rule is set by these, not by the typical input.
    ("upper (non-ASCII)", 'w = repeat("é", N / 2)', "x = upper(w)", [65536, 262144, 917504], 100),
    ("lower (non-ASCII)", 'w = repeat("É", N / 2)', "x = lower(w)", [65536, 262144, 917504], 100),
    ("trim (non-ASCII)", 'w = repeat("é", N / 2)', "x = trim(w)", [65536, 262144, 917504], 300),
    ("find (memmem worst case)", 'w = repeat("a", N)\nt = repeat("a", 4096) .. "b"', "x = find(w, t)",
     [65536, 262144, 917504], 50),
    ("in (memmem worst case)", 'w = repeat("a", N)\nt = repeat("a", 4096) .. "b"', "x = t in w",
     [65536, 262144, 917504], 50),
    ("fmt (exact decimal digits)", "", 'x = fmt("%." .. N .. "f", 1e-300)', [100, 400, 1000], 2000),
    ("< (long common prefix)", 'a = repeat("a", N)\nb = a .. "b"\nc = a .. "c"', "x = b < c",
     [65536, 262144, 600000], 2000),
    # an equal key that is not the stored one (the same string is found by its pointer,
    # without hashing or comparing its bytes)
    ("m[k] (long key)", 'k = repeat("k", N)\nm = {}\nm[k] = 1\nk2 = repeat("k", N)', "x = m[k2]",
     [65536, 262144, 900000], 2000, {"flags": ["--limit", "all=max"]}),
    ("repeat", "", 'x = repeat("ab", N / 2)', [65536, 262144, 917504], 500),
    ("chars", 'w = repeat("abcdefgh", N / 8)', "x = chars(w)", [2048, 8192, 16384], 300),
    # Four-byte characters: the most bytes a character (2026-12-07).
    ("chars (four-byte characters)", 'w = repeat("😀", N / 4)', "x = chars(w)", [8192, 32768, 65536], 300),
    ("reverse (string)", 'w = repeat("abcdefgh", N / 8)', "x = reverse(w)", [65536, 262144, 917504], 100),
    # A one-byte fill is laid down by `memset` (twenty-ninth session); a two-byte one is
    # repeated and copied, the rule's worst shape (its result has twice the bytes).
    ("pad_left", "", 'x = pad_left("a", N)', [65536, 262144, 917504], 500, set_by("pad_left (two-byte fill)")),
    ("pad_left (two-byte fill)", "", 'x = pad_left("a", N / 2, "·")', [65536, 262144, 917504], 500),
    ("starts_with", 'w = repeat("ab", N / 2)', "x = starts_with(w, w)", [65536, 262144, 917504], 3000),
    ("split", WORDS, 'x = split(w, " ")', [16384, 65536, 122880], 300, set_by("split (one-byte pieces)")),
    # The worst shapes of `split` and `lines`: a piece or line per two bytes (the list's
    # items dominate: each is a value written and, at the next call, dropped), and lines
    # too long to be held in the value itself (each its own allocation).
    ("split (one-byte pieces)", 'w = repeat("a ", N / 2)', 'x = split(w, " ")', [16384, 65536, 122880], 300,
     {"flags": ["--limit", "all=max"]}),
    ("lines", 'w = repeat("abcdefg\\n", N / 8)', "x = lines(w)", [16384, 65536, 122880], 300, set_by("lines (one-byte lines)")),
    ("lines (40-byte lines)", 'w = repeat("abcdefghijklmnopqrstuvwxyz0123456789abc\\n", N / 40)', "x = lines(w)",
     [16000, 64000, 120000], 300, set_by("lines (one-byte lines)")),
    ("lines (one-byte lines)", 'w = repeat("a\\n", N / 2)', "x = lines(w)", [16384, 65536, 122880], 300,
     {"flags": ["--limit", "all=max"]}),
    # Long lines: the byte rate (each line one copy; 2026-12-07).
    ("lines (1000-byte lines)", 'w = repeat(repeat("a", 999) .. "\\n", N / 1000)', "x = lines(w)", [16000, 64000, 120000], 300,
     set_by("lines (one-byte lines)")),
    ("join", WORDS + '\nl = split(w, " ")', 'x = join(l, ",")', [16384, 65536, 122880], 300),
    ("html.escape", 'w = repeat("a<b&c\\"d", N / 8)', "x = html.escape(w)", [65536, 131072, 262144], 100),
    ("url.encode", 'w = repeat("a b/c?d=", N / 8)', "x = url.encode(w)", [65536, 131072, 262144], 100),
    ("url.decode", 'w = repeat("a%20b%2F", N / 8)', "x = url.decode(w)", [65536, 262144, 917504], 100),
    ("base64.encode", 'w = repeat("abcdefgh", N / 8)', "x = base64.encode(w)", [65536, 262144, 655360], 100),
    ("base64.decode", 'w = base64.encode(repeat("abcdefgh", N / 8))', "x = base64.decode(w)", [65536, 262144, 655360], 100),
    ("hash.sha256", 'w = repeat("abcdefgh", N / 8)', "x = hash.sha256(w)", [65536, 262144, 917504], 50),
    # collections
    ("range", "", "x = range(N)", [2048, 8192, 16384], 300),
    ("keys", "m = {}\nfor i = 1 to N\n  m[str(i)] = i\nend", "x = keys(m)", [1024, 4096, 8192], 300),
    ("values", "m = {}\nfor i = 1 to N\n  m[str(i)] = i\nend", "x = values(m)", [1024, 4096, 8192], 300),
    ("slice", "l = range(N)", "x = slice(l, 0, N)", [2048, 8192, 16384], 300, set_by("slice (strings)")),
    ("slice (strings)", STRS, "x = slice(l, 0, N)", [2048, 8192, 16384], 300),
    ("reverse (list)", "l = range(N)", "x = reverse(l)", [2048, 8192, 16384], 300, set_by("reverse (list of strings)")),
    ("reverse (list of strings)", STRS, "x = reverse(l)", [2048, 8192, 16384], 300),
    ("sum", "l = range(N)", "x = sum(l)", [2048, 8192, 16384], 3000),
    ("min", "l = range(N)", "x = min(l)", [2048, 8192, 16384], 3000),
    ("index_of", "l = range(N)", "x = index_of(l, -1)", [2048, 8192, 16384], 300),
    ("sort (numbers)", "l = []\nfor i = 1 to N\n  push(l, (i * 7919) % 10007)\nend", "x = sort(l)", [2048, 8192, 16384], 50),
    ("sort (strings)", "l = []\nfor i = 1 to N\n  push(l, str((i * 7919) % 10007))\nend", "x = sort(l)", [2048, 8192, 16384], 50),
    ("sort_by", "l = []\nfor i = 1 to N\n  push(l, {k: (i * 7919) % 10007})\nend", 'x = sort_by(l, "k")', [512, 2048, 4096], 30),
    ("rand.shuffle", "l = range(N)", "x = rand.shuffle(l)", [2048, 8192, 16384], 300, set_by("rand.shuffle (strings)")),
    ("rand.shuffle (strings)", STRS, "x = rand.shuffle(l)", [2048, 8192, 16384], 300),
    # function arguments: an empty function (no line, no step), so that what is measured
    # is the builtin and the call, which WORK_CALLBACK (20 per call) and the rule charge
    ("map", "l = range(N)\nfn f(x)\nend", "x = map(l, f)", [2048, 8192, 16384], 100),
    ("filter", "l = range(N)\nfn f(x)\nend", "x = filter(l, f)", [2048, 8192, 16384], 100),
    ("count", "l = range(N)\nfn f(x)\nend", "x = count(l, f)", [2048, 8192, 16384], 100),
    ("reduce", "l = range(N)\nfn f(a, x)\nend", "x = reduce(l, f, 0)", [2048, 8192, 16384], 100),
    ("group_by", "l = range(N)\nfn f(x)\nend", "x = group_by(l, f)", [2048, 8192, 16384], 100),
    ("sort (function)", "l = range(N)\nfn f(a, b)\nend", "x = sort(l, f)", [2048, 8192, 16384], 20),
    # round 3: anonymous functions (a one-expression body: one step and the call per item)
    ("map (lambda)", "l = range(N)", "x = map(l, fn(v) => v)", [2048, 8192, 16384], 100),
    # round 3: lists, bytes, bits, UTF-8
    ("repeat (list)", "l = [1, 2, 3, 4]", "x = repeat(l, N / 4)", [2048, 8192, 16384], 300,
     set_by("repeat (list of strings)")),
    ("repeat (list of strings)", STRS_HALF, "x = repeat(l, 2)", [2048, 8192, 16384], 300),
    ("concat", "l = range(N / 2)", "x = concat(l, l)", [2048, 8192, 16384], 300, set_by("concat (strings)")),
    ("concat (strings)", STRS_HALF, "x = concat(l, l)", [2048, 8192, 16384], 300),
    ("extend", "l = range(N)", "x = []\n  extend(x, l)", [2048, 8192, 16384], 300),
    ("tr", 'w = repeat("GATTACAN", N / 8)', 'x = tr(w, "ACGTN", "TGCA")', [65536, 262144, 917504], 200),
    ("count (string)", WORDS, 'x = count(w, "a")', [65536, 262144, 917504], 300),
    ("count (overlapping)", 'w = repeat("a", N)', 'x = count(w, "aa")', [65536, 262144, 917504], 100),
    ("utf8.len", 'w = repeat("aé日😀", N // 10)', "x = utf8.len(w)", [65536, 262144, 917504], 300),
    ("utf8.sub", 'w = repeat("aé日😀", N // 10)', "x = utf8.sub(w, 1, -1)", [65536, 262144, 917504], 200),
    ("utf8.valid", 'w = repeat("aé日😀", N // 10)', "x = utf8.valid(w)", [65536, 262144, 917504], 300),
    ("utf8.width", 'w = repeat("aé日😀", N // 10)', "x = utf8.width(w)", [65536, 262144, 917504], 100),
    ("utf8.codes", 'w = repeat("aé日😀", N // 10)', "x = utf8.codes(w)", [4096, 16384, 40960], 300),
    ("fmt (text)", 'f = repeat("ab%%", int(N / 4))', "x = fmt(f)", [65536, 262144, 917504], 50),
    ("fmt (%s)", 'w = repeat("abcdefgh", int(N / 8))', 'x = fmt("[%s]", w)', [65536, 262144, 917504], 100),
    # data
    ("json.parse", 'l = []\nfor i = 1 to N\n  push(l, {a: i, b: "xy"})\nend\nt = json.stringify(l)', "x = json.parse(t)", [256, 1024, 2000], 50,
     set_by("json.parse (empty objects)")),
    # The worst shape: a map every three bytes (`{},`), each made and dropped (2026-12-07).
    ("json.parse (empty objects)", 't = "[" .. join(repeat(["{}"], N), ",") .. "]"', "x = json.parse(t)", [4096, 16384, 65536], 50,
     {"flags": ["--limit", "all=max"]}),
    ("json.stringify", 'l = []\nfor i = 1 to N\n  push(l, {a: i, b: "xy"})\nend', "x = json.stringify(l)", [256, 1024, 2000], 500),
    # issue 25: whole documents in chunks (the file is made once per size by the set-up)
    ("json.read", 'l = []\nfor i = 1 to N\n  push(l, {a: i, b: "xy"})\nend\nfile.write("{tmp}/jr.json", json.stringify(l))',
     'r = file.open("{tmp}/jr.json")\n  x = json.read(r)\n  file.close(r)', [256, 1024, 2000], 50,
     set_by("json.read (empty objects)") | {"flags": ["--limit", "all=max"]}),
    ("json.read (empty objects)", 'file.write("{tmp}/jr.json", "[" .. join(repeat(["{}"], N), ",") .. "]")',
     'r = file.open("{tmp}/jr.json")\n  x = json.read(r)\n  file.close(r)', [4096, 16384, 65536], 50,
     {"flags": ["--limit", "all=max"]}),
    ("json.write", 'l = []\nfor i = 1 to N\n  push(l, {a: i, b: "xy"})\nend', 'json.write("{tmp}/jw.json", l)',
     [256, 1024, 2000], 300, {"flags": ["--limit", "all=max"]}),
    ("json.print", 'l = []\nfor i = 1 to N\n  push(l, {a: i, b: "xy"})\nend', "json.print(l)",
     [256, 1024, 2000], 300, {"flags": ["--limit", "all=max"]}),
    ("csv.parse", 't = repeat("abc,\\"d,e\\",12\\n", int(int(N / 14)))', "x = csv.parse(t)", [8192, 32768, 65536], 50),
    # A record costs about 110 ns whatever its length, a field about 16: the shapes of
    # many records and many fields (2026-12-07).
    ("csv.parse (empty fields)", 't = repeat(",,,,,,,\\n", int(N / 8))', "x = csv.parse(t)", [8192, 32768, 65536], 50,
     {"flags": ["--limit", "all=max"]}),
    ("csv.parse (one-byte lines)", 't = repeat("a\\n", int(N / 2))', "x = csv.parse(t)", [8192, 32768, 65536], 50,
     {"flags": ["--limit", "all=max"]}),
    ("csv.parse (one-byte CRLF lines)", 't = repeat("a\\r\\n", int(N / 3))', "x = csv.parse(t)", [8192, 32768, 65536], 50,
     {"flags": ["--limit", "all=max"]}),
    ("csv.stringify", 'rows = csv.parse(repeat("abc,\\"d,e\\",12\\n", int(int(N / 14))))', "x = csv.stringify(rows)", [8192, 32768, 65536], 50),
    ("url.parse_query", 'w = repeat("a=b&cd=e%20f&", int(N / 12))', "x = url.parse_query(w)", [4096, 16384, 65536], 50),
    ("re.test", 'w = repeat("abcdefgh", N / 8)', 'x = re.test("[0-9]+x", w)', [65536, 262144, 917504], 100),
    ("re.find_all", WORDS, 'x = re.find_all("[a-z]+", w)', [16384, 65536, 122880], 50),
    ("re.replace", WORDS, 'x = re.replace("b(c)", w, "$1$1")', [65536, 262144, 524288], 50),
    # groups found by the capture engine's quick search, charged by the steps it takes
    # (a backtracking step a byte and more: alternatives tried in order); the row above is
    # its typical shape (a few steps a match)
    ("re.replace (groups by backtracking)", 'w = repeat("abababababababababababababababc ", N / 32)',
     'x = re.replace("((?:a|b)+)c", w, "$1")', [16384, 65536, 131072], 50),
    ("re.split", WORDS, 'x = re.split(" +", w)', [16384, 65536, 122880], 50),
    # a pattern whose lazy DFA thrashes on random a/b: it gives up and the charged PikeVM runs
    ("re (PikeVM)", ABRAND, 'x = re.test("a[ab]{400}[^ab]", w)', [65536, 262144, 524288], 1),
    # a higher-priority branch outlives each match: every find rescans to the end
    ("re (rescan)", 'w = repeat("a", N)', 'x = re.replace("[ab]*c|a", w, "")', [4096, 8192, 16384], 5),
    # the lazy DFA thrashes and gives up, and a higher-priority branch outlives each match:
    # every find of the iteration rescans to the end on the NFA simulation
    ("re (NFA rescan)", ABRAND, 'x = re.find_all("(?:a[ab]{1280}[ab]*c)|b", w)', [4096, 8192, 16384], 1,
     set_by("re (PikeVM)")),
    # a pattern too big for the lazy DFA's cache: only the NFA simulation
    ("re (no DFA)", 'w = repeat("\u00e9", N / 2)', 'x = re.test("\\\\w{40}x", w)', [16384, 65536, 131072], 3),
    # Unicode \b on non-ASCII text: the lazy DFA cannot, the PikeVM runs
    ("re (Unicode \\b)", 'w = repeat("h\u00e9llo w\u00f6rld ", int(N / 14))', 'x = re.find_all("\\\\b\\\\w+\\\\b", w)', [16384, 49152, 98304], 20),
    ("date.format", 'f = repeat("%Y-%m-%d ", int(N / 9))', "x = date.format(0, f)", [4096, 16384, 65536], 100),
    # the worst format shape for date.parse: an item every byte or two, read twice (issue 23)
    # (the text matches the format but fixes no date: a parse error, caught)
    ("date.parse (dense format)", 'f = repeat("a ", N / 2)', "try\n  x = date.parse(f, f)\ncatch e\nend",
     [65536, 262144, 917504], 20),
    ("date.parse (%n format)", 'f = repeat("%n", N / 2)', "try\n  x = date.parse(\"\", f)\ncatch e\nend",
     [65536, 262144, 917504], 20),
    # a zone's first use in the process: its TZif data parsed (charged by its bytes), once
    ("date zones (first use)", 'zs = slice(date.zones(), 0, N)', "for z in zs\n  x = date.offset(0, z)\nend",
     [100, 300, 597], 1),
    # operators, copies and text
    ("concat ..", 'w = repeat("ab", N / 4)', "x = w .. w", [16384, 32768, 61440], 20000),
    ("interpolation", 'w = repeat("ab", N / 4)', 'x = "${w}-${w}"', [65536, 262144, 524288], 500),
    ("== (lists)", "l = range(N)\nm = range(N)", "x = l == m", [2048, 8192, 16384], 300),
    ("== (strings)", 'w = repeat("ab", N / 2)\nv = repeat("ab", N / 2)', "x = w == v", [65536, 262144, 917504], 3000),
    ("in (list)", "l = range(N)", "x = -1 in l", [2048, 8192, 16384], 300),
    ("in (string)", WORDS, 'x = "zq" in w', [65536, 262144, 917504], 2000, set_by("in (memmem worst case)")),
    ("str (list)", "l = range(N)", "x = str(l)", [2048, 8192, 16384], 300),
    ("copy-on-write (list)", "l = range(N)", "y = l\ny[0] = 1", [2048, 8192, 16384], 300,
     set_by("copy-on-write (list of strings)")),
    ("copy-on-write (list of strings)", STRS, "y = l\ny[0] = 1", [2048, 8192, 16384], 300),
    ("copy-on-write (map)", "m = {}\nfor i = 1 to N\n  m[str(i)] = i\nend", 'y = m\ny["1"] = 0', [1024, 4096, 8192], 100),
    # I/O
    ("file.write", 'w = repeat("abcdefgh", N / 8)\np = "{tmp}/w.txt"', "file.write(p, w)", [65536, 262144, 917504], 16),
    ("csv.next", 'p = "{tmp}/c.csv"\nrow = repeat("ab,", int(N / 3)) .. "z\\n"\nfile.write(p, "")\nfor j = 1 to 1010\n  file.append(p, row)\nend\nh = csv.open(p)',
     "x = csv.next(h)", [256, 1024, 3000], 1000),
    # Empty fields (the field rate) and 30-byte ones (the byte rate; 2026-12-07).
    ("csv.next (empty fields)", 'p = "{tmp}/c.csv"\nrow = repeat(",", N) .. "\\n"\nfile.write(p, "")\nfor j = 1 to 1010\n  file.append(p, row)\nend\nh = csv.open(p)',
     "x = csv.next(h)", [256, 1024, 3000], 1000),
    ("csv.next (30-byte fields)", 'p = "{tmp}/c.csv"\nrow = repeat("abcdefghijklmnopqrstuvwxyz012,", int(N / 30)) .. "z\\n"\nfile.write(p, "")\nfor j = 1 to 1010\n  file.append(p, row)\nend\nh = csv.open(p)',
     "x = csv.next(h)", [256, 1024, 3000], 1000),
    ("file.read_line", 'p = "{tmp}/l.txt"\nrow = repeat("a", N) .. "\\n"\nfile.write(p, "")\nfor j = 1 to 1010\n  file.append(p, row)\nend\nh = file.open(p)',
     "x = file.read_line(h)", [1024, 4096, 12000], 1000),
    ("file.read", 'p = "{tmp}/r.txt"\nfile.write(p, repeat("abcdefgh", N / 8))', "x = file.read(p)", [65536, 262144, 917504], 200),
    # Rows that need a grant or a fixture (issue 23): a sixth field, a dict with "flags"
    # (added to the run's command line; {tmp} is the run's temporary directory), "prep"
    # (a function of (tmp, N) run before both runs of a size: files, a database) and
    # "env" (a function of N giving variables added to the run's environment).
    # A directory of N entries, read whole each time (getdents, one string per name, sorted).
    ("dir.list", "", 'x = dir.list("{tmp}/dir" .. N)', [1024, 4096, 16384], 50,
     {"flags": ["--allow-read={tmp}"], "prep": lambda tmp, n: make_dir(tmp, n, "e{:06d}")}),
    # Worst shape: names of 255 bytes that differ only at the end (each comparison of the
    # sort reads the whole name; the listing copies 255 bytes a name).
    ("dir.list (long names)", "", 'x = dir.list("{tmp}/long" .. N)', [512, 2048, 4096], 50,
     {"flags": ["--allow-read={tmp}"], "prep": lambda tmp, n: make_dir(tmp, n, "n" * 249 + "{:06d}", "long")}),
    # N variables in the process environment (read, copied, sorted, made a map).
    ("env.all", "", "x = env.all()", [1024, 4096, 12000], 100,
     {"env": lambda n: {f"LEASH_BENCH_{i:06d}": "v" for i in range(n)}}),
    # Worst shape: names of 200 bytes sharing a 194-byte prefix (sort and map hashing).
    ("env.all (long names)", "", "x = env.all()", [512, 2048, 4096], 100,
     {"env": lambda n: {"L" * 194 + f"{i:06d}": "v" for i in range(n)}}),
    # N variables of the script's overlay (env.set), which hide and add to the process's.
    ("env.all (overlay)", 'for j = 1 to N\n  env.set("LEASH_OVERLAY_" .. j, "v")\nend', "x = env.all()",
     [512, 1024, 4000], 100, {}),
    # SQLite: bytes bound as a parameter (WORK_DB_BYTE_X256), a statement that only binds
    ("db (bytes bound)", 'd = db.open(":memory:")\nw = repeat("abcdefgh", N / 8)',
     'x = db.query(d, "SELECT 1 AS one WHERE ?1 IS NOT NULL", [w])', [65536, 262144, 917504], 200,
     {"flags": ["--allow-db"], "set_by": "db (bytes written to two indexes)"}),
    # ... bytes returned: a text of N bytes read from a table (overflow pages) into a row
    ("db (bytes returned)", 'd = db.open(":memory:")\ndb.exec(d, "CREATE TABLE t (v TEXT)")\n'
     'db.exec(d, "INSERT INTO t VALUES (?)", [repeat("abcdefgh", N / 8)])', 'x = db.query(d, "SELECT v FROM t")',
     [65536, 262144, 917504], 200, {"flags": ["--allow-db"], "set_by": "db (bytes written to two indexes)"}),
    # ... bound and returned: a parameter echoed back
    ("db (bound and returned)", 'd = db.open(":memory:")\nw = repeat("abcdefgh", N / 8)',
     'x = db.query(d, "SELECT ?1 AS v", [w])', [65536, 262144, 917504], 200, {"flags": ["--allow-db"], "set_by": "db (bytes written to two indexes)"}),
    # ... a big parameter written to a table (overflow pages allocated and filled)
    ("db (bytes written)", 'd = db.open(":memory:")\ndb.exec(d, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")\n'
     'w = repeat("abcdefgh", N / 8)', 'db.exec(d, "INSERT OR REPLACE INTO t VALUES (1, ?)", [w])',
     [65536, 262144, 917504], 200, {"flags": ["--allow-db"], "set_by": "db (bytes written to two indexes)"}),
    # ... written to a table and to two indexes on the value (one more copy per index)
    ("db (bytes written to two indexes)", 'd = db.open(":memory:")\n'
     'db.exec(d, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")\ndb.exec(d, "CREATE INDEX i1 ON t (v)")\n'
     'db.exec(d, "CREATE INDEX i2 ON t (v, k)")\nw = repeat("abcdefgh", N / 8)',
     'db.exec(d, "INSERT OR REPLACE INTO t VALUES (1, ?)", [w])', [65536, 262144, 917504], 100,
     {"flags": ["--allow-db"]}),
    # SQLite's copies inside one instruction (issue 23): charged by the bytes SQLite allocates
    # and the page bytes it fetches (leash-alloc counts both).
    ("db (recursive CTE carrying a value)", 'd = db.open(":memory:")\nw = repeat("abcdefgh", N / 8)',
     'x = db.query(d, "WITH RECURSIVE r(i, s) AS (SELECT 1, ?1 UNION ALL SELECT i + 1, s FROM r WHERE i < 200) '
     'SELECT count(*) AS n FROM r", [w])', [65536, 262144, 917504], 5, {"flags": ["--allow-db"]}),
    ("db (value in 20 indexes)", 'd = db.open(":memory:")\n'
     'db.exec(d, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")\nfor j = 1 to 20\n'
     '  db.exec(d, "CREATE INDEX i" .. j .. " ON t (v)")\nend\nw = repeat("abcdefgh", N / 8)',
     'db.exec(d, "INSERT OR REPLACE INTO t VALUES (?, ?)", [i % 4, w])', [16384, 65536, 262144], 50,
     {"flags": ["--allow-db"]}),
]


def make_dir(tmp, n, pattern, prefix="dir"):
    """{tmp}/{prefix}N holding n empty files named by pattern (made once per size)."""
    d = os.path.join(tmp, f"{prefix}{n}")
    if not os.path.isdir(d):
        os.mkdir(d)
        for i in range(n):
            open(os.path.join(d, pattern.format(i)), "w").close()


def leash_bin(arg):
    if arg:
        return arg
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "leash")


def program(setup, op, loop):
    lines = ["N = num(args()[0])", "K = num(args()[1])", setup]
    if loop:
        lines += ["for i = 1 to K"] + ["  " + l for l in op.splitlines()] + ["end"]
    return "\n".join(l for l in lines if l) + "\n"


def run_once(leash, path, n, k, flags=(), env=None):
    proc = subprocess.Popen(
        [leash, "--stats", "--allow-files", "--max-steps", "100000000", "--max-work", "10000000000000",
         "--max-memory", "1G", *flags, path, str(n), str(k)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = proc.stderr.read().decode()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = status
    if status != 0:
        raise RuntimeError(f"{path} N={n} K={k} failed: {err[-400:]}")
    stats = json.loads([l for l in err.splitlines() if l.startswith('{"stats"')][-1])["stats"]
    return (ru.ru_utime + ru.ru_stime) * 1e9, stats["work"]


def measure(leash, tmp, case, reps):
    name, setup, op, sizes, k = case[:5]
    extra = case[5] if len(case) > 5 else {}
    flags = [f.replace("{tmp}", tmp) for f in extra.get("flags", [])]
    setup = setup.replace("{tmp}", tmp)
    op = op.replace("{tmp}", tmp)
    loop_p = os.path.join(tmp, "loop.lsh")
    base_p = os.path.join(tmp, "base.lsh")
    with open(loop_p, "w") as f:
        f.write(program(setup, op, True))
    with open(base_p, "w") as f:
        f.write(program(setup, op, False))
    points = []
    for n in sizes:
        if "prep" in extra:
            extra["prep"](tmp, n)
        env = dict(os.environ, **extra["env"](n)) if "env" in extra else None
        best_loop = min((run_once(leash, loop_p, n, k, flags, env) for _ in range(reps)), key=lambda t: t[0])
        best_base = min((run_once(leash, base_p, n, k, flags, env) for _ in range(reps)), key=lambda t: t[0])
        points.append((n, best_loop[0] - best_base[0], best_loop[1] - best_base[1]))
    (_, t0, w0), (_, t1, w1) = points[0], points[-1]
    slope = (t1 - t0) / (w1 - w0) if w1 > w0 else float("nan")
    per_unit = [t / w if w else float("nan") for _, t, w in points]
    return {"name": name, "points": points, "slope": slope, "per_unit": per_unit, "k": k}


def in_band(r):
    """A rule's worst row in 0.5..2 ns per unit; a typical row of a rule set by another
    (`set_by`) only not under-charged."""
    lo = 0.0 if r.get("set_by") else 0.5
    return lo <= r["slope"] <= 2.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--leash", default="")
    ap.add_argument("--json", default="", help="also write the results to this file")
    a = ap.parse_args()
    leash = leash_bin(a.leash)
    only = {s.strip() for s in a.only.split(",") if s.strip()}
    results = []
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if only and case[0] not in only:
                continue
            try:
                r = measure(leash, tmp, case, a.reps)
            except RuntimeError as e:
                print(f"{case[0]:<22} ERROR {e}", flush=True)
                bad.append(case[0])
                continue
            r["set_by"] = (case[5] if len(case) > 5 else {}).get("set_by")
            results.append(r)
            ok = in_band(r)
            if not ok:
                bad.append(r["name"])
            if not a.markdown:
                pts = "  ".join(f"{n}:{w / r['k']:.0f}u" for n, _, w in r["points"])
                typ = f"  typical: rule set by {r['set_by']}" if r["set_by"] else ""
                print(f"{r['name']:<22} {r['slope']:6.2f} ns/unit  {'ok ' if ok else 'OUT'}{typ}  "
                      f"(per op: {pts}; ns/unit at each size "
                      + ", ".join(f"{x:.2f}" for x in r["per_unit"]) + ")", flush=True)
    if a.markdown:
        print("| rule | sizes | work per op (largest) | ns per unit (slope) | in 0.5..2 (typical rows: at most 2) |")
        print("|---|---|---|---|---|")
        for r in results:
            n, _, w = r["points"][-1]
            sizes = ", ".join(str(p[0]) for p in r["points"])
            ok = ("yes" if in_band(r) else "**no**") + (f" (typical; rule set by {r['set_by']})" if r["set_by"] else "")
            print(f"| {r['name']} | {sizes} | {w / r['k']:.0f} | {r['slope']:.2f} | {ok} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if bad:
        print("outside 0.5..2 ns per unit (typical rows: over 2): " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
