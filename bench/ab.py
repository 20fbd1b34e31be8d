#!/usr/bin/env python3
"""A/B of Leash binaries and cores on the bench workloads, in CPU time.

Usage: bench/ab.py N BIN@CORE [BIN@CORE ...]   (CORE: tree or vm; WL="fib map" limits
the workloads). Each workload runs N rounds; a round runs every configuration once, in
turn, so that the machine's drift falls on all alike; the cell is the minimum user+sys
CPU ms over the rounds, then its ratio to the first configuration. Sizes are smaller
than bench/run.py's, for quick comparisons while tuning (instruction counts miss stalls:
see WORKLOG, 2026-12-04 sixth session). Example:
  bench/ab.py 5 /tmp/old-leash@tree target/release/leash@tree target/release/leash@vm
"""
import os, sys, subprocess, resource
n = int(sys.argv[1]); CF = [tuple(x.split("@")) for x in sys.argv[2:]]
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
tot = {"tree": 0, "vm": 0}
import math
lg = []
for name, f, args, inp in W:
    if only and name not in only.split(): continue
    best = {cf: 1e9 for cf in CF}
    for i in range(n):
        for cf in CF:
            b, c = cf
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            with open(inp or "/dev/null", "rb") as fi:
                p = subprocess.run([b, "--allow-files", "--max-steps", "1000000000", "--max-work", "100000000000", "--limit", "all=max", f] + args,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=fi, env=dict(os.environ, LEASH_CORE=c))
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if p.returncode != 0: print(name, c, "FAILED", p.stderr.decode()[:200]); break
            best[cf] = min(best[cf], (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
    b0 = best[CF[0]]
    lg.append([math.log(best[cf] / b0) for cf in CF])
    print(f"{name:12} " + " ".join(f"{best[cf]:6.0f} ({best[cf]/b0:.2f})" for cf in CF), flush=True)
print("geomean vs first: " + " ".join(f"{math.exp(sum(r[i] for r in lg)/len(lg)):.3f}" for i in range(len(CF))))
