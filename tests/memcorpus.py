"""The hostile memory corpus of tests/test_memory.py: scripts that try to make `leash`
hold more than `--max-memory`, each run under `/usr/bin/time -f %M` (peak RSS) and under
an address-space cap, so that a failing case cannot take the machine down.

Run it directly to print the measured table (WORKLOG.md has one):

    LEASH_BIN=target/release/leash python3 tests/memcorpus.py [--max-memory 32M]
"""
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

MIB = 1024 * 1024

# What a case may hold above --max-memory, as leash documents it (README, LANGUAGE.md).
OVERHEAD = 64 * MIB
# Every child runs under RLIMIT_AS of this much above its --max-memory: far above what a
# correct leash needs (its interpreter thread reserves a 256 MiB stack, and malloc
# reserves arenas), far below what an unbounded one would take on a shared machine.
AS_SLACK = 1536 * MIB
# Each case must end in this many seconds.
CASE_TIMEOUT = 60

S1M = 's = repeat("a", 1048576)\n'


def chain(n):
    """A function whose `return` joins n 1 MiB temporaries with `..`, recursing."""
    ops = " .. ".join(["upper(s)"] * n)
    return S1M + f'fn f(n)\nif n == 0\nreturn ""\nend\nreturn {ops} .. f(n - 1)\nend\nx = f(62)\n'


def list_literal(n):
    items = ", ".join(["upper(s)"] * n)
    return S1M + f"fn g(n)\nif n == 0\nreturn []\nend\nreturn [{items}, g(n - 1)]\nend\nx = g(62)\n"


def big_args(n):
    params = ", ".join(f"a{i}" for i in range(n))
    args = ", ".join(["upper(s)"] * n)
    return S1M + (
        f"fn take({params}, rest)\nreturn 1\nend\n"
        f"fn h(n)\nif n == 0\nreturn 0\nend\nreturn take({args}, h(n - 1))\nend\nx = h(62)\n"
    )


def pending_args(n):
    """Arguments under the call_args limit, but held while the last one recurses."""
    params = ", ".join(f"a{i}" for i in range(n))
    args = ", ".join(["upper(s)"] * n)
    return 's = repeat("a", 1000000)\n' + (
        f"fn take({params}, rest)\nreturn 1\nend\n"
        f"fn h(n)\nif n == 0\nreturn 0\nend\nreturn take({args}, h(n - 1))\nend\nx = h(62)\n"
    )


def dense_source(term="1"):
    """About 4 MiB of dense expression lines (the source limit), 1,024 tokens each: sums
    of number constants, or of a variable (`term="a"`)."""
    head = "a = 1\n" if term != "1" else ""
    line = "x = " + "+".join([term] * 510) + "\n"
    n = (4 * MIB - 64 - len(head)) // len(line)
    return head + line * n


CORPUS = {
    # name: (source, extra args, allowed exit statuses)
    "string doubling": ('s = "x"\nwhile true\ns = s .. s\nend\n', [], {4}),
    "list growth": ('l = []\nwhile true\npush(l, "item " .. len(l))\nend\n', [], {4}),
    "map growth": ('m = {}\ni = 0\nwhile true\nm["key " .. i] = i\ni += 1\nend\n', [], {4}),
    "nested lists": ("l = [1, 2, 3]\nwhile true\nl = [l, l, l, l]\nend\n", [], {4}),
    "deep frames": (
        'fn d(n)\ns = repeat("z", 1000000)\nt = upper(s)\nif n > 0\nd(n - 1)\nend\nend\nd(62)\n',
        [],
        {0, 4},
    ),
    "chain of 200 temporaries": (chain(200), [], {4}),
    "list literals of big items": (list_literal(100), [], {4}),
    "100 big arguments": (big_args(100), [], {4}),
    "2 big arguments held": (pending_args(2), [], {0, 4}),
    "sort 16,000 strings": (
        'l = []\nfor i = 1 to 16000\npush(l, repeat("s", 50) .. (16000 - i))\nend\n'
        "fn sorted(l)\nreturn len(sort(l))\nend\nfor k = 1 to 200\nn = sorted(l)\nend\nprint(n)\n",
        ["--max-steps", "100000000"],
        {0, 4},
    ),
    "re.find_all over 1 MiB": (S1M + 'for k = 1 to 20\nn = len(re.find_all("a{64}", s))\nend\nprint(n)\n', [], {0, 4}),
    "json.stringify shared": (
        "v = [1, 2, 3]\nfor i = 1 to 11\nv = [v, v]\nend\nfor k = 1 to 20\nt = json.stringify(v, 2)\nend\n"
        "print(len(t))\n",
        [],
        {0, 4},
    ),
    "date.format long format": (
        'f = repeat("%c", 500000)\nt = date.format(0, f)\nprint(len(t))\n',
        [],
        {0, 4},
    ),
    "dense 4 MiB source": (dense_source(), [], {0, 3, 4}),
    "dense 4 MiB source of variables": (dense_source("a"), [], {0, 3, 4}),
    # Function arguments (issue 16): the most memory a callback builtin can build in one call.
    "map to 1 MiB strings": (S1M + 'fn big(x)\nreturn upper(s)\nend\nfor k = 1 to 20\nl = map(range(16384), big)\nend\n', [], {4}),
    "group_by with 1 MiB keys": (S1M + 'fn key(x)\nreturn slice(s, 0, 1000000) .. x\nend\ng = group_by(range(16384), key)\n', [], {4}),
    "re.replace with a 1 MiB callback": (S1M + 'fn big(g)\nreturn s\nend\nx = re.replace("a", s, big)\n', [], {4}),
    "sort of big strings with a comparator": (
        S1M + 'fn before(a, b)\nreturn a > b\nend\nh = slice(s, 0, 1000000)\nl = [h .. "1", h .. "2", h .. "3", h .. "4"]\nfor k = 1 to 50\nl = sort(l, before)\nend\nprint(len(l))\n',
        [],
        {0, 4},
    ),
    "block string template": ('t = """\n  <p>${repeat("x", 1000000)}</p>\n  """\nl = []\nwhile true\npush(l, upper(t))\nend\n', [], {4}),
    # The builtins and forms that lay their text out at once (twenty-ninth session): the
    # most text one call or one interpolation makes, held until the bound ends it.
    "join to a 16 MiB string, held": (
        S1M + "parts = []\nfor i = 1 to 16\npush(parts, s)\nend\nl = []\nwhile true\npush(l, join(parts, \"\"))\nend\n",
        ["--limit", "all=max"],
        {4},
    ),
    "pad_left to a 16 MiB string, held": (
        'l = []\nwhile true\npush(l, pad_left("a", 16000000, "-"))\nend\n',
        ["--limit", "all=max"],
        {4},
    ),
    "replace doubling a text": ('s = repeat("a", 1000)\nwhile true\ns = replace(s, "a", "aa")\nend\n', ["--limit", "string=16M", "--limit", "frame_storage=max"], {4}),
    "interpolation of big variables, held": (S1M + 'l = []\nwhile true\npush(l, "${s}${s}${s}${s}")\nend\n', ["--limit", "all=max"], {4}),
    # One call whose result is many times what the bound leaves (thirtieth session): with
    # `--limit all=max` a value may be as big as its ceiling, so the room for it is found
    # before it is built (`Host::room`), not after.
    "one call: chars of a 16 MB text": ('s = repeat("a", 16000000)\nc = chars(s)\nprint(len(c))\n', ["--limit", "all=max"], {4}),
    "one call: split into 16 M pieces": ('s = repeat(",", 16000000)\nl = split(s, ",")\nprint(len(l))\n', ["--limit", "all=max"], {4}),
    "one call: lines of 16 M newlines": ('s = repeat("\\n", 16000000)\nl = lines(s)\nprint(len(l))\n', ["--limit", "all=max"], {4}),
    "one call: replace doubling a 128 MiB text": (
        's = repeat("ab", 67108864)\nt = replace(s, "a", "aa")\nprint(len(t))\n', ["--limit", "all=max"], {4}),
    "one call: a 128 MiB text joined to itself": ('s = repeat("ab", 67108864)\nt = s .. s\nprint(len(t))\n', ["--limit", "all=max"], {4}),
    "one call: repeat to 240 MiB beside 128 MiB": (
        's = repeat("ab", 67108864)\nt = repeat("ab", 125829120)\nprint(len(t))\n', ["--limit", "all=max"], {4}),
    "one call: pad_left to 250 MB beside 128 MiB": (
        's = repeat("ab", 67108864)\nt = pad_left(s, 250000000, "x")\nprint(len(t))\n', ["--limit", "all=max"], {4}),
    "one call: upper of a 200 MB text": ('s = repeat("a", 200000000)\nt = upper(s)\nprint(len(t))\n', ["--limit", "all=max"], {4}),
    "one call: html.escape of 16 MB of quotes": (
        's = repeat("\\"", 16000000)\nt = html.escape(s)\nprint(len(t))\n', ["--limit", "all=max"], {0, 4}),
    "one call: repeat of a list to 16 M items": ('l = repeat([nil], 16000000)\nprint(len(l))\n', ["--limit", "all=max"], {0, 4}),
    "one call: range of 16 M numbers": ('l = range(16000000)\nprint(len(l))\n', ["--limit", "all=max"], {0, 4}),
    "one call: re.find_all of 16 M matches": ('s = repeat("a", 16000000)\nl = re.find_all(".", s)\nprint(len(l))\n', ["--limit", "all=max"], {4}),
    "one call: re.split into 16 M pieces": ('s = repeat(",", 16000000)\nl = re.split(",", s)\nprint(len(l))\n', ["--limit", "all=max"], {4}),
    "one call: csv.parse of a record of 16 M fields": ('s = repeat(",", 16000000)\nl = csv.parse(s)\nprint(len(l))\n', ["--limit", "all=max"], {4}),
    "one call: json.stringify of nils 50 deep, indented": (
        'l = repeat([nil], 2000000)\nfor i = 1 to 50\nl = [l]\nend\nt = json.stringify(l, 2)\nprint(len(t))\n', ["--limit", "all=max"], {0, 4}),
    "one call: url.encode of 16 MB of newlines": ('s = repeat("\\n", 16000000)\nt = url.encode(s)\nprint(len(t))\n', ["--limit", "all=max"], {0, 4}),
    "one call: an interpolation of two 110 MB variables": (
        's = repeat("a", 110000000)\nt = "${s}${s}"\nprint(len(t))\n', ["--limit", "all=max"], {4}),
    "one call: str of a list of 250 shares of a 1 MB string, twice": (
        's = repeat("a", 1000000)\nl = repeat([s], 250)\nt = str(l) .. str(l)\nprint(len(t))\n', ["--limit", "all=max"], {4}),
    "one call: fmt of a 200 MB field": ('t = fmt("%200000000s", "x")\nprint(len(t))\n', ["--limit", "all=max"], {4}),
    # A list dropped whose only item is a list of 12 million numbers: the drop's work list
    # held all of their items (192 MiB) while it ran, so the run ended past the bound
    # (and the resident-size check stopped it on the next line).
    "dropping a list that holds a 192 MiB list": ('m = [range(12000000)]\nm = nil\nprint(1)\n', ["--limit", "all=max"], {0, 4}),
    # A copy of a list as big as what the bound leaves: sorted, reversed, sliced, shuffled.
    "one call: sort of a 192 MiB list": ('l = range(12000000)\nm = sort(l)\nprint(len(m))\n', ["--limit", "all=max"], {4}),
    "one call: reverse of a 192 MiB list": ('l = range(12000000)\nm = reverse(l)\nprint(len(m))\n', ["--limit", "all=max"], {4}),
    "one call: slice of a 192 MiB list": ('l = range(12000000)\nm = slice(l, 0, len(l))\nprint(len(m))\n', ["--limit", "all=max"], {4}),
    "one call: rand.shuffle of a 192 MiB list": ('l = range(12000000)\nm = rand.shuffle(l)\nprint(len(m))\n', ["--limit", "all=max"], {4}),
}


def _limit_as(limit):
    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return pre


def run_case(leash, name, max_memory=None, check=False, tmp=None):
    """Run one case; returns (exit status, peak RSS bytes, seconds, stderr tail)."""
    src, extra, _ = CORPUS[name]
    tmp = pathlib.Path(tmp or tempfile.mkdtemp())
    path = tmp / (name.replace(" ", "_").replace(",", "").replace(".", "_") + ".lsh")
    path.write_text(src)
    mm = ["--max-memory", max_memory] if max_memory else []
    cmd = ["/usr/bin/time", "-f", "%M", str(leash)]
    cmd += ["check", *mm, str(path)] if check else ["--error-format", "json", *mm, *extra, str(path)]
    budget = parse_bytes(max_memory or "256M")
    t0 = time.monotonic()
    p = subprocess.run(
        cmd,
        capture_output=True,
        timeout=CASE_TIMEOUT,
        preexec_fn=_limit_as(budget + OVERHEAD + AS_SLACK),
    )
    secs = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "replace").strip().splitlines()
    rss = int(err[-1]) * 1024 if err and err[-1].isdigit() else -1
    return p.returncode, rss, secs, "\n".join(err[:-1])[-4000:]


def parse_bytes(s):
    mult = {"K": 1024, "M": MIB, "G": 1024 * MIB}
    if s[-1] in mult:
        return int(s[:-1]) * mult[s[-1]]
    return int(s)


def main():
    leash = os.environ.get("LEASH_BIN", "target/release/leash")
    mms = [None, "32M"]
    print("| case | default: status, peak RSS | --max-memory 32M: status, peak RSS |")
    print("|---|---|---|")
    rows = [(n, False) for n in CORPUS] + [("dense 4 MiB source", True)]
    for name, check in rows:
        cells = []
        for mm in mms:
            st, rss, secs, err = run_case(leash, name, mm, check=check)
            kind = ""
            if '"kind":"' in err:
                kind = " " + err.split('"kind":"')[1].split('"')[0]
            cells.append(f"{st}{kind}, {rss / MIB:.1f} MiB, {secs:.2f} s")
        label = name + (" (check)" if check else "")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
