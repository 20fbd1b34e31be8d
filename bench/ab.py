#!/usr/bin/env python3
"""A/B of Leash binaries and cores on the bench workloads, in CPU time.

Usage: bench/ab.py N BIN[@CORE] [BIN[@CORE] ...]   (WL="fib map" limits the workloads;
CORE, tree or vm, sets LEASH_CORE for a build from before the fourteenth session, which
had the tree evaluator beside the compiled core; a newer build has one core). Each workload runs N rounds; a round runs every configuration once, in
turn, so that the machine's drift falls on all alike; the cell is the minimum user+sys
CPU ms over the rounds, then its ratio to the first configuration. Sizes are smaller
than bench/run.py's, for quick comparisons while tuning (instruction counts miss stalls:
see WORKLOG, 2026-12-04 sixth session). Example:
  bench/ab.py 5 /tmp/round2-leash /tmp/before-leash target/release/leash
A binary older than `--limit all=max` (round 2's, 4e42571, the evaluator issue 24 was
written against) gets each of its limits at its ceiling instead (read from its own
`--limits`), and its `--max-steps` ceiling. With `--callgrind` (first argument) each
cell is valgrind's instruction count of one run instead of CPU time (stable on a
loaded machine; stalls do not show).
"""
import os, sys, subprocess, resource
CG = len(sys.argv) > 1 and sys.argv[1] == "--callgrind"
if CG: del sys.argv[1]
n = int(sys.argv[1]); CF = [tuple(x.split("@", 1)) if "@" in x else (x, "") for x in sys.argv[2:]]

def flags(b, _cache={}):
    """The flags that lift a binary's limits: `--limit all=max`, or (a binary from before
    it) each limit at the ceiling its `--limits` table gives."""
    if b not in _cache:
        ok = subprocess.run([b, "--limit", "all=max", "-e", ""], capture_output=True).returncode == 0
        if ok:
            _cache[b] = ["--allow-files", "--max-steps", "1000000000", "--max-work", "100000000000", "--limit", "all=max"]
        else:
            fl = ["--allow-files", "--max-steps", "100000000", "--max-work", "10000000000000"]
            rows = subprocess.run([b, "--limits"], capture_output=True, text=True).stdout.splitlines()[1:]
            for r in rows:
                name, _, ceil = r.split("\t")[:3]
                if ceil.startswith("min("):
                    ceil = ceil[4:].split(",")[1].rstrip(")")
                fl += ["--limit", f"{name}={ceil.replace('1T', '1024G')}"]
            _cache[b] = fl
    return _cache[b]

HERE = os.path.dirname(os.path.abspath(__file__))
I = os.path.join(HERE, "..", "target", "bench", "inputs"); L = os.path.join(HERE, "leash")
W = [("fib", L+"/fib.lsh", [], None), ("loop", L+"/loop.lsh", [], None),
     ("map", L+"/map.lsh", ["1000000"], None), ("nbody", L+"/nbody.lsh", ["30000"], None),
     ("richards", L+"/richards.lsh", ["3"], None), ("bounce", L+"/bounce.lsh", ["20"], None),
     ("fannkuch", L+"/fannkuch.lsh", ["9"], None), ("sieve", L+"/sieve.lsh", ["40"], None),
     ("binarytrees", L+"/binarytrees.lsh", ["12"], None), ("queens", L+"/queens.lsh", ["40"], None),
     ("towers", L+"/towers.lsh", ["20"], None), ("translate", L+"/translate.lsh", ["10"], None),
     ("strings", L+"/strings.lsh", ["100000"], None), ("list", L+"/list.lsh", ["40"], None),
     ("permute", L+"/permute.lsh", ["40"], None), ("storage", L+"/storage.lsh", ["20"], None),
     ("json", L+"/json.lsh", [], None), ("array", L+"/array.lsh", [], None),
     ("jsonparse", L+"/jsonparse.lsh", [], I+"/ops.json"), ("wordfreq", L+"/wordfreq.lsh", [], I+"/words.txt"),
     ("logparse", L+"/logparse.lsh", [], I+"/access.log"), ("textops", L+"/textops.lsh", [], I+"/text.txt"),
     ("csvsum", L+"/csvsum.lsh", [I+"/rows.csv"], None)]
only = os.environ.get("WL")
import math
lg = []
for name, f, args, inp in W:
    if only and name not in only.split(): continue
    best = {cf: 1e9 for cf in CF}
    for i in range(n):
        for cf in CF:
            b, c = cf
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            pre = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] if CG else []
            with open(inp or "/dev/null", "rb") as fi:
                p = subprocess.run(pre + [b] + flags(b) + [f] + args,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=fi, env=dict(os.environ, LEASH_CORE=c) if c else None)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if p.returncode != 0: print(name, c, "FAILED", p.stderr.decode()[-300:]); break
            if CG:
                best[cf] = min(best[cf], int(p.stderr.decode().split("Collected : ")[1].split()[0]) / 1e6)
            else:
                best[cf] = min(best[cf], (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
    b0 = best[CF[0]]
    lg.append([math.log(best[cf] / b0) for cf in CF])
    print(f"{name:12} " + " ".join(f"{best[cf]:6.0f} ({best[cf]/b0:.2f})" for cf in CF), flush=True)
print("geomean vs first: " + " ".join(f"{math.exp(sum(r[i] for r in lg)/len(lg)):.3f}" for i in range(len(CF))))
