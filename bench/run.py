#!/usr/bin/python3
"""Leash benchmark runner: Leash against CPython 3, Lua 5.4, Tcl 8.6 and Perl 5.

Run it with the system interpreter, from anywhere:

    /usr/bin/python3 bench/run.py [--reps N] [--only W[,W..]] [--langs L[,L..]]
                                  [--markdown] [--leash PATH]

It builds leash in release mode (cargo decides whether anything needs doing),
installs missing peers with apt-get, runs every workload in every language
alternately (A B C D E, A B C D E, ...) for --reps repetitions after one
untimed warm-up round, and measures each run's user+sys CPU time and peak RSS.
Every language must print the same checksum for a workload; a mismatch or a
failed run is reported loudly and makes the exit status 1. The table shows
medians per language and the Leash/peer ratios against the project's targets.

Standard library only.
"""

import argparse
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
MEASURE_SRC = os.path.join(BENCH, "measure.c")
MEASURE_BIN = os.path.join(ROOT, "target", "bench", "measure")
RESULTS_DIR = os.path.join(BENCH, "results")

CPYTHON = "/usr/bin/python3"
LEASH_MAX_STEPS = "100000000"
LEASH_MAX_WORK = "10000000000000"
RUN_TIMEOUT = 300  # seconds for one run of one program

# Language key -> display name, source directory, file extension.
LANGS = {
    "leash": ("Leash", "leash", "lsh"),
    "python": ("CPython", "python", "py"),
    "lua": ("Lua", "lua", "lua"),
    "tcl": ("Tcl", "tcl", "tcl"),
    "perl": ("Perl", "perl", "pl"),
}
LANG_ORDER = ["leash", "python", "lua", "tcl", "perl"]

# Workloads, in table order. Each case is (case name, workload file, args).
# The scaling pairs run the same program at two sizes; the larger size is
# the workload's main row, with N passed explicitly.
WORKLOADS = {
    "startup": [("startup", "startup", [])],
    "fib": [("fib", "fib", [])],
    "loop": [("loop", "loop", [])],
    "strings": [("strings", "strings", ["100000"]), ("strings 50k", "strings", ["50000"])],
    "array": [("array", "array", [])],
    "map": [("map", "map", ["300000"]), ("map 150k", "map", ["150000"])],
    "json": [("json", "json", [])],
    # Text workloads (issue 12): inputs written by bench/gen_text.py. "@NAME" in the
    # arguments is the path of that input; TEXT_STDIN names the input fed on stdin.
    "wordfreq": [("wordfreq", "wordfreq", [])],
    "logparse": [("logparse", "logparse", [])],
    "csvsum": [("csvsum", "csvsum", ["@rows.csv"]),
               ("csvsum parse", "csvsum", ["@rows.csv"])],
    "textops": [("textops", "textops", [])],
    "jsonbig": [("jsonbig", "jsonbig", [])],
    # Classic cross-language interpreter benchmarks (issue 24): the Are We Fast Yet set
    # and three of the Computer Language Benchmarks Game's, in Leash, CPython, Lua and
    # Perl (no Tcl). Each program's default size is the measured one.
    "bounce": [("bounce", "bounce", [])],
    "list": [("list", "list", [])],
    "permute": [("permute", "permute", [])],
    "queens": [("queens", "queens", [])],
    "sieve": [("sieve", "sieve", [])],
    "storage": [("storage", "storage", [])],
    "towers": [("towers", "towers", [])],
    "richards": [("richards", "richards", [])],
    "nbody": [("nbody", "nbody", [])],
    "fannkuch": [("fannkuch", "fannkuch", [])],
    "binarytrees": [("binarytrees", "binarytrees", [])],
    "translate": [("translate", "translate", [])],
    "jsonparse": [("jsonparse", "jsonparse", [])],
}
CLASSIC_WORKLOADS = ["bounce", "list", "permute", "queens", "sieve", "storage", "towers",
                     "richards", "nbody", "fannkuch", "binarytrees", "translate", "jsonparse"]
CORE_WORKLOADS = ["startup", "fib", "loop", "strings", "array", "map", "json"]
WORKLOAD_ORDER = ["startup", "fib", "loop", "strings", "array", "map", "json",
                  "wordfreq", "logparse", "csvsum", "textops", "jsonbig"] + CLASSIC_WORKLOADS
# Names --only also takes for a group of workloads.
WORKLOAD_GROUPS = {"core": CORE_WORKLOADS, "text": ["wordfreq", "logparse", "csvsum", "textops", "jsonbig"],
                   "classic": CLASSIC_WORKLOADS}
TEXT_WORKLOADS = ["wordfreq", "logparse", "csvsum", "textops", "jsonbig"]
TEXT_CASES = {"wordfreq", "logparse", "csvsum", "csvsum parse", "textops", "jsonbig"}
TEXT_STDIN = {"wordfreq": "words.txt", "logparse": "access.log", "textops": "text.txt",
              "jsonbig": "big.json", "jsonparse": "ops.json"}
INPUTS_DIR = os.path.join(ROOT, "target", "bench", "inputs")
# A case whose program differs per language: {case: {lang: program}}. "csvsum parse" is
# Leash's other way to read CSV (csv.parse of each line, bench/leash/csvline.lsh); the
# peers run their one CSV program again, so the row compares the same work.
PROGRAM_FOR = {"csvsum parse": {"leash": "csvline"}}
# Where a language has no library for the work, the cell says so instead of a figure.
NOT_AVAILABLE = {("jsonbig", "lua"): "n/a: no JSON library", ("jsonbig", "tcl"): "n/a: no JSON library"}
NOT_AVAILABLE.update({(w, "tcl"): "n/a: not written" for w in CLASSIC_WORKLOADS})
# Extra Leash options per case (the gates a program needs).
LEASH_FLAGS = {"csvsum": ["--allow-files"], "csvsum parse": ["--allow-files"]}

# What every language must print (checked across languages as well).
EXPECTED = {
    "startup": "hello",
    "fib": "196418",
    "loop": "6000001",
    "strings": "588895",
    "strings 50k": "288894",
    "array": "204490645",
    "map": "5000 57",
    "map 150k": "5000 35",
    "json": "1835740 40020000",
    "wordfreq": "734651 5951 ilwes:1373 ilnu:1020 vepekaan:1010 ternumi:914 ilsolaxve:895",
    "logparse": "100000 7885 1963490284 /ba/axan/lo/:475 /venu/pe/teran.html:373 "
                "/chteran/ilsolkaax/ch.html:328",
    "csvsum": "50000 16527 books:66799:63212357 food:65230:62204860 garden:65987:63116829 "
              "home:65008:61122694 music:64784:61053396 sport:65176:62271735 "
              "tools:65763:62460757 toys:65566:63404910",
    "textops": "81576960",
    "jsonbig": "18147220",
    # Classic: the Are We Fast Yet result of one run times the runs.
    "bounce": "66550",          # 50 x 1331
    "list": "400",              # 40 x 10
    "permute": "519600",        # 60 x 8660
    "queens": "1000",           # 100 x 10 placements
    "sieve": "66900",           # 100 x 669
    "storage": "218440",        # 40 x 5461
    "towers": "245730",         # 30 x 8191
    "richards": "23246 9297",   # queued packets and holds of one run (2 runs)
    "nbody": "-0.169075164 -0.169020695",  # 30,000 steps
    "fannkuch": "8629 30",      # n = 9
    "binarytrees": "16383 126976 130048 130816 131008 131056 8191",  # depth 12
    "translate": "50000 qlsmmn mmnmcemr yi glpncrpqkoo",  # 20 rounds
    "jsonparse": "160 124 660 663 1525 158",  # ops, objects, arrays, strings, numbers, literals
}
EXPECTED["csvsum parse"] = EXPECTED["csvsum"]

# Scaling pairs: (label, large case, small case).
SCALING = [("strings 100k / 50k", "strings", "strings 50k"),
           ("map 300k / 150k", "map", "map 150k")]

# Targets: Leash / peer CPU ratio must be at most this.
TARGET_PY = 1.0
TARGET_TCL = 1.0
TARGET_FAST = 2.0  # vs min(Lua, Perl)
TARGET_STARTUP_LUA = 1.5
TARGET_STARTUP_RSS_LUA = 2.0
TARGET_SCALING = 2.5
TARGET_TEXT_PERL = 1.25  # text workloads: Leash within 1.25x of Perl (and at or below CPython)

# Debian packages that provide a missing peer.
APT_PACKAGES = {"lua": ["lua5.4"], "tcl": ["tcl"], "perl": ["perl"], "python": ["python3"]}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- setup

def build_leash():
    """Build leash in release mode; cargo skips the work when it is current."""
    binary = os.path.join(ROOT, "target", "release", "leash")
    cargo = shutil.which("cargo")
    if cargo is None:
        if os.path.exists(binary):
            log("cargo not found; using the existing %s" % binary)
            return binary
        sys.exit("run.py: cargo not found and no %s: cannot build leash" % binary)
    log("building leash (cargo build --release) ...")
    proc = subprocess.run([cargo, "build", "--release"], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0 or not os.path.exists(binary):
        sys.exit("run.py: cargo build --release failed:\n" + proc.stdout[-4000:])
    return binary


def build_measure():
    """Compile the small fork/wait4 helper; None when no C compiler exists."""
    if os.path.exists(MEASURE_BIN) and os.path.getmtime(MEASURE_BIN) >= os.path.getmtime(MEASURE_SRC):
        return MEASURE_BIN
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    os.makedirs(os.path.dirname(MEASURE_BIN), exist_ok=True)
    proc = subprocess.run([cc, "-O2", "-o", MEASURE_BIN, MEASURE_SRC],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        log("could not compile %s:\n%s" % (MEASURE_SRC, proc.stdout))
        return None
    return MEASURE_BIN


def apt_install(packages):
    apt = shutil.which("apt-get")
    if apt is None:
        log("apt-get not found; cannot install %s" % " ".join(packages))
        return False
    cmd = [apt, "install", "-y", "-q"] + packages
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            log("not root and no sudo; cannot install %s" % " ".join(packages))
            return False
        cmd = ["sudo", "-n"] + cmd
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log("installing %s ..." % " ".join(packages))
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    proc = subprocess.run(cmd, **quiet)
    if proc.returncode != 0:
        # The package lists may be missing or stale: refresh them once.
        update = cmd[:cmd.index("install")] + ["update", "-q"]
        subprocess.run(update, **quiet)
        proc = subprocess.run(cmd, **quiet)
    if proc.returncode != 0:
        log("apt-get install %s failed:\n%s" % (" ".join(packages), proc.stderr.strip()[-2000:]))
        return False
    return True


def find_interpreter(lang):
    if lang == "python":
        return CPYTHON if os.access(CPYTHON, os.X_OK) else None
    if lang == "lua":
        return shutil.which("lua5.4")
    if lang == "tcl":
        return shutil.which("tclsh8.6") or shutil.which("tclsh")
    if lang == "perl":
        return shutil.which("perl")
    return None


def ensure_interpreter(lang):
    path = find_interpreter(lang)
    if path is None and lang in APT_PACKAGES:
        apt_install(APT_PACKAGES[lang])
        path = find_interpreter(lang)
    return path


def capture(cmd, stdin=None):
    try:
        proc = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=30)
        return proc.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def interpreter_version(lang, path):
    if lang == "leash":
        out = capture([path, "--version"])
        return out.splitlines()[0] if out else "?"
    if lang == "python":
        return capture([path, "--version"])
    if lang == "lua":
        out = capture([path, "-v"])
        m = re.search(r"Lua [\d.]+", out)
        return m.group(0) if m else out
    if lang == "tcl":
        return "Tcl " + capture([path], stdin="puts [info patchlevel]\n")
    if lang == "perl":
        return "Perl " + capture([path, "-e", "print substr($^V, 1)"])
    return "?"


def machine_info():
    cpu = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    cpu.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    model = cpu.get("model name", "?")
    if "cpu family" in cpu and "model" in cpu:
        model += " (family %s model %s" % (cpu["cpu family"], cpu["model"])
        if "cpu MHz" in cpu:
            model += ", %.0f MHz" % float(cpu["cpu MHz"])
        model += ")"
    if "hypervisor" in cpu.get("flags", "").split():
        model += ", virtual machine"
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = "%.0f GiB" % (int(line.split()[1]) / 1024 / 1024)
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "memory": mem,
            "kernel": platform.release()}


def load_average():
    try:
        return "%.2f" % os.getloadavg()[0]
    except OSError:
        return "?"


# ---------------------------------------------------------------- running

def command_for(lang, interp, workload, args, case=None):
    _, subdir, ext = LANGS[lang]
    workload = PROGRAM_FOR.get(case, {}).get(lang, workload)
    script = os.path.join(BENCH, subdir, "%s.%s" % (workload, ext))
    args = [os.path.join(INPUTS_DIR, a[1:]) if a.startswith("@") else a for a in args]
    if lang == "leash":
        # The benchmarks measure speed, not the default budgets: a large work budget
        # (the default of 2e9 units is about 2 s of CPU) and the gates a program needs.
        return ([interp, "--max-steps", LEASH_MAX_STEPS, "--max-work", LEASH_MAX_WORK]
                + LEASH_FLAGS.get(case, []) + [script] + args)
    return [interp, script] + args


def stdin_for(case):
    name = TEXT_STDIN.get(case)
    return os.path.join(INPUTS_DIR, name) if name else None


# `--core`: which Leash core runs the workloads (LEASH_CORE; None: the default).
CORE = None


# Environment variables that change how an interpreter starts (search paths,
# init code, buffering) are removed so that every language runs as installed; Leash's
# core is then set again when `--core` chose one.
def child_env():
    drop = ("PYTHON", "LUA_", "PERL5", "PERL_", "PERLLIB", "TCL", "LEASH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    if CORE:
        env["LEASH_CORE"] = CORE
    return env


MEASURE_RE = re.compile(r"^@@measure (\d+) (\d+) (\d+) (\d+)$")


def open_stdin(path):
    return open(path, "rb") if path else subprocess.DEVNULL


def run_once(cmd, measure, stdin_path=None):
    """Run cmd; return (status, cpu_seconds, maxrss_kb, stdout, stderr)."""
    full = [measure] + cmd if measure else cmd
    stdin = open_stdin(stdin_path)
    try:
        proc = subprocess.Popen(full, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, env=child_env())
    finally:
        if stdin_path:
            stdin.close()
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return ("timeout", None, None, out.decode("utf-8", "replace"),
                "timed out after %d s" % RUN_TIMEOUT)
    # Popen has already reaped the child; its rusage comes from the helper.
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    if measure:
        lines = err.rstrip("\n").split("\n")
        m = MEASURE_RE.match(lines[-1]) if lines else None
        if not m:
            return ("no measurement", None, None, out, err)
        err = "\n".join(lines[:-1]).rstrip("\n")
        status, user_us, sys_us, rss = (int(g) for g in m.groups())
        return (status, (user_us + sys_us) / 1e6, rss, out, err)
    return (proc.returncode, None, None, out, err)


def run_once_wait4(cmd, stdin_path=None):
    """Fallback without the C helper: os.wait4 on a direct child.

    Peak RSS then includes the pages copied from this runner at fork, so it
    is floored at roughly the runner's own size (about 10 MB).
    """
    with tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        stdin = open_stdin(stdin_path)
        try:
            proc = subprocess.Popen(cmd, stdin=stdin, stdout=fout, stderr=ferr,
                                    start_new_session=True, env=child_env())
        finally:
            if stdin_path:
                stdin.close()
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = 0  # reaped here; keep Popen from waiting again
        fout.seek(0)
        ferr.seek(0)
        out, err = fout.read(), ferr.read()
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    return (code, ru.ru_utime + ru.ru_stime, ru.ru_maxrss,
            out.decode("utf-8", "replace"), err.decode("utf-8", "replace").rstrip("\n"))


# ---------------------------------------------------------------- report

def fmt_ms(seconds):
    ms = seconds * 1000.0
    if ms < 10:
        return "%.2f" % ms
    if ms < 100:
        return "%.1f" % ms
    return "%.0f" % ms


def fmt_mb(kb):
    return "%.1f" % (kb / 1024.0)


def fmt_ratio(r, target):
    if r is None:
        return "-"
    s = "%.2f" % r
    if target is not None and r > target:
        s += " ✗"
    return s


def render_table(headers, rows, markdown):
    if markdown:
        lines = ["| " + " | ".join(headers) + " |",
                 "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
        for row in rows:
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    def line(cells):
        return "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                         for i, c in enumerate(cells)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def summarize(results, case, lang):
    """Median CPU seconds and RSS KB, or None and a failure text."""
    runs = results.get(case, {}).get(lang)
    if runs is None:
        return None
    if runs["failure"]:
        return None
    cpu = [r[0] for r in runs["runs"]]
    rss = [r[1] for r in runs["runs"]]
    if not cpu:
        return None
    return statistics.median(cpu), statistics.median(rss)


def cell(results, case, lang):
    runs = results.get(case, {}).get(lang)
    if runs is None:
        return "n/a"
    if (case, lang) in NOT_AVAILABLE:
        return NOT_AVAILABLE[(case, lang)]
    if runs["failure"]:
        return "FAIL (%s)" % runs["failure"]
    med = summarize(results, case, lang)
    if med is None:
        return "-"
    text = "%s ms / %s MB" % (fmt_ms(med[0]), fmt_mb(med[1]))
    if runs.get("wrong"):
        text = "WRONG OUTPUT " + text
    return text


def ratio(results, case, num, dens, index=0):
    a = summarize(results, case, num)
    if a is None:
        return None
    vals = [summarize(results, case, d) for d in dens]
    vals = [v[index] for v in vals if v is not None]
    if not vals:
        return None
    return a[index] / min(vals) if min(vals) > 0 else None


def geomean(values):
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def report(results, cases, langs, markdown, misses):
    headers = ["workload"] + [LANGS[l][0] for l in langs]
    has_leash = "leash" in langs
    if has_leash:
        headers += ["Leash/CPython", "Leash/Tcl", "Leash/min(Lua,Perl)",
                    "startup Leash/Lua CPU / RSS"]
        if any(c in TEXT_CASES for c in cases) and "perl" in langs:
            headers.append("text: Leash/Perl")
    rows = []
    for case in cases:
        row = [case] + [cell(results, case, l) for l in langs]
        if has_leash:
            # The half-size rows of the scaling pairs are shown for reference;
            # the targets are judged on the main rows.
            judged = case in WORKLOAD_ORDER or case in TEXT_CASES
            fast = [l for l in ("lua", "perl") if l in langs]
            checks = [
                (ratio(results, case, "leash", ["python"]) if "python" in langs else None,
                 TARGET_PY, "Leash/CPython"),
                (ratio(results, case, "leash", ["tcl"]) if "tcl" in langs else None,
                 TARGET_TCL, "Leash/Tcl"),
                (ratio(results, case, "leash", fast) if fast else None,
                 TARGET_FAST, "Leash/min(Lua,Perl)"),
            ]
            leash_failure = results.get(case, {}).get("leash", {}).get("failure")
            if judged and leash_failure:
                misses.append("%s: Leash failed (%s), not measured" % (case, leash_failure))
            elif judged and results.get(case, {}).get("leash", {}).get("wrong"):
                misses.append("%s: Leash printed a wrong checksum" % case)
            for r, target, what in checks:
                if judged and r is not None and r > target:
                    misses.append("%s: %s %.2f > %.1f" % (case, what, r, target))
                row.append(fmt_ratio(r, target if judged else None))
            if case == "startup" and "lua" in langs:
                r_cpu = ratio(results, case, "leash", ["lua"])
                r_rss = ratio(results, case, "leash", ["lua"], index=1)
                for r, target, what in ((r_cpu, TARGET_STARTUP_LUA, "CPU Leash/Lua"),
                                        (r_rss, TARGET_STARTUP_RSS_LUA, "RSS Leash/Lua")):
                    if r is not None and r > target:
                        misses.append("%s: %s %.2f > %.1f" % (case, what, r, target))
                row.append("%s / %s" % (fmt_ratio(r_cpu, TARGET_STARTUP_LUA),
                                        fmt_ratio(r_rss, TARGET_STARTUP_RSS_LUA)))
            else:
                row.append("")
            if any(c in TEXT_CASES for c in cases) and "perl" in langs:
                if case in TEXT_CASES:
                    r = ratio(results, case, "leash", ["perl"])
                    if r is not None and r > TARGET_TEXT_PERL:
                        misses.append("%s: text Leash/Perl %.2f > %.2f" % (case, r, TARGET_TEXT_PERL))
                    row.append(fmt_ratio(r, TARGET_TEXT_PERL))
                else:
                    row.append("")
        rows.append(row)
    out = [render_table(headers, rows, markdown)]

    # Geometric means of the Leash/peer CPU ratios over a group of workloads (the
    # classic set, and the core and classic set together: issue 24's targets).
    if "leash" in langs:
        grows = []
        for label, group in (("classic", CLASSIC_WORKLOADS),
                             ("core + classic", [w for w in CORE_WORKLOADS if w != "startup"]
                              + CLASSIC_WORKLOADS)):
            members = [c for c in cases if c in group]
            if not members or (label != "classic" and not any(c in CORE_WORKLOADS for c in members)):
                continue
            grow = ["%s (%d)" % (label, len(members))]
            for peer in ("python", "lua", "perl"):
                rs = [ratio(results, c, "leash", [peer]) for c in members] if peer in langs else []
                rs = [r for r in rs if r]
                grow.append(fmt_ratio(geomean(rs), None) if len(rs) == len(members) else "-")
            grows.append(grow)
        if grows:
            out.append("")
            out.append("Geometric mean of the Leash/peer CPU ratios:" + ("\n" if markdown else ""))
            out.append(render_table(["workloads", "Leash/CPython", "Leash/Lua", "Leash/Perl"],
                                    grows, markdown))

    pairs = [(label, big, small) for label, big, small in SCALING if big in cases and small in cases]
    if pairs:
        srows = []
        for label, big, small in pairs:
            srow = [label]
            for l in langs:
                a, b = summarize(results, big, l), summarize(results, small, l)
                if a is None or b is None or b[0] <= 0:
                    srow.append("-")
                    continue
                r = a[0] / b[0]
                srow.append(fmt_ratio(r, TARGET_SCALING if l == "leash" else None))
                if l == "leash" and r > TARGET_SCALING:
                    misses.append("%s: Leash scaling %.2f > %.1f" % (label, r, TARGET_SCALING))
            srows.append(srow)
        out.append("")
        out.append("Scaling (CPU time ratio, larger N / smaller N):" if not markdown
                   else "Scaling (CPU time ratio, larger N / smaller N):\n")
        out.append(render_table(["pair"] + [LANGS[l][0] for l in langs], srows, markdown))
    return "\n".join(out)


# ---------------------------------------------------------------- main

def parse_list(value, allowed, what):
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad:
        raise argparse.ArgumentTypeError("unknown %s: %s (choose from %s)"
                                         % (what, ", ".join(bad), ", ".join(allowed)))
    return items


def main():
    ap = argparse.ArgumentParser(
        prog="run.py",
        description="Benchmark Leash against CPython 3, Lua 5.4, Tcl 8.6 and Perl 5. "
                    "Reports the median user+sys CPU time and median peak RSS of each "
                    "language on each workload, checks that all languages print the same "
                    "checksum, and shows the Leash/peer ratios against the targets "
                    "(ratios above a target are marked ✗). Exit status 1 on a checksum "
                    "mismatch or a failed run, 0 otherwise.",
        epilog="workloads: %s (strings and map also run at half size for the scaling "
               "ratios); languages: %s. Example: /usr/bin/python3 bench/run.py --reps 3 "
               "--only fib,loop --langs leash,python"
               % (", ".join(WORKLOAD_ORDER), ", ".join(LANG_ORDER)))
    ap.add_argument("--reps", type=int, default=5, metavar="N",
                    help="timed repetitions per language and workload (default 5)")
    ap.add_argument("--warmup", type=int, default=1, metavar="N",
                    help="untimed rounds before the timed ones (default 1)")
    ap.add_argument("--only", metavar="WORKLOAD[,..]", default=",".join(WORKLOAD_ORDER),
                    type=lambda v: [w for x in parse_list(v, WORKLOAD_ORDER + list(WORKLOAD_GROUPS),
                                                          "workload")
                                    for w in WORKLOAD_GROUPS.get(x, [x])],
                    help="run only these workloads, or groups: core, text, classic (default: all)")
    ap.add_argument("--langs", metavar="LANG[,..]", default=",".join(LANG_ORDER),
                    type=lambda v: parse_list(v, LANG_ORDER, "language"),
                    help="run only these languages (default: all)")
    ap.add_argument("--markdown", action="store_true",
                    help="print the tables as Markdown (for bench/README.md)")
    ap.add_argument("--core", choices=["tree", "vm"],
                    help="the Leash core to run, for a build from before the fourteenth session "
                         "that had two (LEASH_CORE; a newer build has one)")
    ap.add_argument("--leash", metavar="PATH",
                    help="use this leash binary instead of building target/release/leash")
    opts = ap.parse_args()
    global CORE
    CORE = opts.core
    if opts.reps < 1:
        ap.error("--reps must be at least 1")
    if opts.warmup < 0:
        ap.error("--warmup must be at least 0")

    langs = [l for l in LANG_ORDER if l in opts.langs]
    workloads = [w for w in WORKLOAD_ORDER if w in opts.only]
    cases = [c for w in workloads for c in WORKLOADS[w]]
    case_names = [c[0] for c in cases]

    measure = build_measure()
    if measure is None:
        log("WARNING: no C compiler for bench/measure.c; measuring with os.wait4 directly. "
            "Peak RSS is then floored at about this runner's own size (~10 MB).")

    interps = {}
    problems = []
    skipped = []
    for lang in langs:
        if lang == "leash":
            path = os.path.abspath(opts.leash) if opts.leash else build_leash()
            if not os.access(path, os.X_OK):
                path = None
        else:
            path = ensure_interpreter(lang)
        if path is None:
            # A missing peer is skipped, saying so; a missing leash is a problem.
            if lang == "leash":
                problems.append("%s: interpreter not available" % LANGS[lang][0])
            else:
                log("SKIPPING %s: no interpreter found and none could be installed"
                    % LANGS[lang][0])
                skipped.append(LANGS[lang][0])
                continue
        interps[lang] = path
    langs = [l for l in langs if l in interps]

    if any(w in TEXT_WORKLOADS or w in TEXT_STDIN for w in workloads):
        log("writing the text inputs (bench/gen_text.py) if missing ...")
        sys.path.insert(0, BENCH)
        import gen_text
        gen_text.generate(INPUTS_DIR)

    versions = {l: interpreter_version(l, interps[l]) for l in langs if interps[l]}
    info = machine_info()

    # results[case][lang] = {"runs": [(cpu_s, rss_kb)], "outputs": set, "failure": str|None}
    results = {name: {} for name in case_names}
    for name in case_names:
        for lang in langs:
            results[name][lang] = {"runs": [], "outputs": [], "failure": None, "stderr": ""}
            if (name, lang) in NOT_AVAILABLE:
                results[name][lang]["failure"] = "n/a"
            elif interps[lang] is None:
                results[name][lang]["failure"] = "missing"

    load_before = load_average()
    started = time.monotonic()
    total_rounds = opts.warmup + opts.reps
    # Each round runs every workload once in every language, the languages
    # alternating within a workload (A B C D E). Spreading a workload's
    # repetitions over the whole run keeps a burst of load from other
    # processes from skewing all of its samples at once.
    for rnd in range(total_rounds):
        timed = rnd >= opts.warmup
        log("round %d/%d%s (%.0f s)" % (rnd + 1, total_rounds, "" if timed else ", warm-up",
                                       time.monotonic() - started))
        for name, workload, args in cases:
            for lang in langs:
                res = results[name][lang]
                if res["failure"]:
                    continue
                cmd = command_for(lang, interps[lang], workload, args, name)
                if measure:
                    status, cpu, rss, out, err = run_once(cmd, measure, stdin_for(name))
                else:
                    status, cpu, rss, out, err = run_once_wait4(cmd, stdin_for(name))
                if status != 0:
                    res["failure"] = ("exit %s" % status) if isinstance(status, int) else status
                    res["stderr"] = err.strip()
                    problems.append("%s / %s failed (%s): %s"
                                    % (name, LANGS[lang][0], res["failure"],
                                       err.strip()[:500] or "(no stderr)"))
                    continue
                res["outputs"].append(out.strip())
                if timed:
                    res["runs"].append((cpu, rss))
    elapsed = time.monotonic() - started

    # Checksums: each language must print the same thing on every run, and all
    # languages must agree (and match the reference value).
    for name in case_names:
        seen = {}
        for lang in langs:
            res = results[name][lang]
            outs = set(res["outputs"])
            if len(outs) > 1:
                res["wrong"] = True
                problems.append("CHECKSUM: %s / %s printed different output across runs: %s"
                                % (name, LANGS[lang][0], sorted(outs)))
            for o in outs:
                seen.setdefault(o, []).append(lang)
        if not seen:
            continue
        # The reference value decides who is wrong; without one, the majority.
        right = EXPECTED.get(name) or max(seen, key=lambda o: len(seen[o]))
        for o, ls in seen.items():
            if o != right:
                for lang in ls:
                    results[name][lang]["wrong"] = True
        if len(seen) > 1:
            problems.append("CHECKSUM MISMATCH on %s: %s (expected %r)" % (
                name, "; ".join("%s -> %r" % (", ".join(LANGS[l][0] for l in ls), o)
                                for o, ls in seen.items()), right))
        elif next(iter(seen)) != right:
            problems.append("CHECKSUM: %s printed %r by all languages, expected %r"
                            % (name, next(iter(seen)), right))
    for p in problems:
        if p.startswith("CHECKSUM"):
            log("!!! " + p)

    misses = []
    table = report(results, case_names, langs, opts.markdown, misses)

    header = []
    header.append("Machine: %s CPU(s), %s, %s RAM, Linux %s" % (
        info["nproc"], info["cpu"], info["memory"], info["kernel"]))
    commit = capture(["git", "-C", ROOT, "log", "-1", "--format=%h %cs"])
    leash_src = (" (built from commit %s)" % commit
                 if "leash" in versions and not opts.leash and re.match(r"^[0-9a-f]+ ", commit) else "")
    header.append("Interpreters: " + "; ".join(versions[l] + (leash_src if l == "leash" else "")
                                               for l in langs if l in versions))
    if skipped:
        header.append("Skipped (not installed): %s" % ", ".join(skipped))
    header.append("Date: %s" % time.strftime("%Y-%m-%d %H:%M %Z"))
    header.append("Median of %d runs after %d warm-up round(s); cells are user+sys CPU ms / peak RSS MB. "
                  "Run time %.0f s; 1-minute load average %s before, %s after."
                  % (opts.reps, opts.warmup, elapsed, load_before, load_average()))
    if opts.markdown:
        print("\n\n".join(header))
    else:
        print("\n".join(header))
    print()
    print(table)
    print()
    if misses:
        print("Targets missed (%d):" % len(misses))
        for m in misses:
            print(("- " if opts.markdown else "  ") + m)
    elif "leash" in langs:
        print("All targets met.")
    if problems:
        print()
        print("PROBLEMS (%d):" % len(problems))
        for p in problems:
            print(("- " if opts.markdown else "  ") + " | ".join(p.splitlines()))

    os.makedirs(RESULTS_DIR, exist_ok=True)
    with open(os.path.join(RESULTS_DIR, "latest.json"), "w") as f:
        json.dump({"machine": info, "versions": versions, "reps": opts.reps,
                   "results": {n: {l: {"runs": r["runs"], "outputs": sorted(set(r["outputs"])),
                                       "failure": r["failure"], "stderr": r["stderr"][:2000]}
                                   for l, r in v.items()} for n, v in results.items()},
                   "misses": misses, "problems": problems}, f, indent=1)

    if problems:
        log("\nrun.py: %d problem(s); see PROBLEMS above" % len(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
