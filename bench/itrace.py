#!/usr/bin/env python3
"""The machine instructions each Leash instruction runs, one by one, from a live run.

Usage: bench/itrace.py [--skip N] [--ops K] [--quiet] BIN SCRIPT [ARG...]

Runs BIN on SCRIPT under gdb, stops at the dispatch loop's indirect jump (the jump
table of `vm_exec`'s `match`) after passing it N times (default 20,000: a loop is in
its steady state by then), then steps one machine instruction at a time through the
next K dispatches (default 6) and prints each instruction with the function it is in
(inlined code shows as its caller). A block runs from the jump into one compiled
instruction's code to the jump into the next one's (the instruction's own code, the
loop's way back to its top, the next instruction's fetch and step charge) and ends with
its exact count, where callgrind's per-line costs are spread over inlined code. Calls
out of `vm_exec` (`vm_call`, `vm_ret`, builtins, the allocator) are stepped into and
counted in the block that made them. The run gets `--limit all=max` and large step and
work budgets.

Needs gdb and objdump. Example (WORKLOG, thirty-second session: in a `for` loop whose
body is `x = i`, the move's block is 83 instructions and the back edge's 72):
  bench/itrace.py target/release/leash /tmp/loop.lsh
"""
import argparse, os, re, subprocess, sys, tempfile


def dispatch_address(binary):
    """The symbol of `vm_exec` and the offset in it of its first indirect jump."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True,
                         text=True, check=True).stdout
    sym, start = None, None
    for line in out.splitlines():
        m = re.match(r"([0-9a-f]+) <(.*vm_exec.*)>:$", line)
        if m and "Interp" in m.group(2):
            sym, start = m.group(2), int(m.group(1), 16)
            continue
        if sym and re.match(r"\s*[0-9a-f]+:\s+jmp\s+\*%r", line):
            return sym, int(line.split(":")[0], 16) - start
        if sym and line == "":
            break
    sys.exit("itrace: no indirect jump found in vm_exec of %s" % binary)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip", type=int, default=20000)
    ap.add_argument("--ops", type=int, default=6)
    ap.add_argument("--quiet", action="store_true", help="counts only, no listing")
    ap.add_argument("binary")
    ap.add_argument("script")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    sym, off = dispatch_address(a.binary)
    limit = 20000  # machine instructions at most (a builtin's call may be long)
    gdb = f"""set pagination off
set confirm off
set print asm-demangle on
starti
break *((char*)&'{sym}' + {off})
run
continue {a.skip}
set $n = 0
set $ops = 0
while $ops <= {a.ops} && $n < {limit}
  x/i $pc
  if $pc == (char*)&'{sym}' + {off}
    set $ops = $ops + 1
  end
  stepi
  set $n = $n + 1
end
kill
quit
"""
    with tempfile.NamedTemporaryFile("w", suffix=".gdb", delete=False) as f:
        f.write(gdb)
    cmd = ["gdb", "-q", "-batch", "-x", f.name, "--args", a.binary, "--limit", "all=max",
           "--max-steps", "1000000000", "--max-work", "100000000000", a.script] + a.args
    try:
        out = subprocess.run(cmd, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    lines = [l for l in out.splitlines() if l.startswith("=>")]
    blocks, cur = [], []
    for l in lines:
        m = re.match(r"=>\s+(0x[0-9a-f]+)\s+<(.*)\+(\d+)>:\s+(.*)", l)
        if not m:
            continue
        addr, fn, at, ins = m.groups()
        fn = re.sub(r"::h[0-9a-f]{16}$", "", re.sub(r"<.*?>", "", fn)).split("::")[-1][:28]
        cur.append((fn, ins))
        # (The dispatch's own jump only: an instruction's inner `match` may have a jump
        # table of its own.)
        if fn == "vm_exec" and int(at) == off:
            blocks.append(cur)
            cur = []
    if not blocks:
        sys.exit("itrace: the run did not reach the dispatch %d times" % a.skip)
    for b in blocks[1:]:
        if not a.quiet:
            for fn, ins in b:
                print(f"  {fn:28} {re.sub(r' <.*', '', ins)[:80]}")
        print(f"-- {len(b)} instructions\n")


if __name__ == "__main__":
    main()
