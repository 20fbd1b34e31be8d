"""Issue 25 measurements, several runs each (bench/issue25/README.md).

    python3 runs.py [RUNS] [CASE ...]

Runs every case RUNS times (default 5) under /usr/bin/time and prints, per case and
tool, the exit status, the least CPU time (user + system) and wall time over the runs,
and the largest peak RSS (`%M`). The machine is shared: the minimum is the figure least
disturbed by other load. Data files come from gen.py (under /tmp, never committed);
LEASH defaults to the release build.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LEASH = os.environ.get("LEASH", os.path.join(HERE, "../../target/release/leash"))
L = [LEASH, "--limit", "all=max", "--max-steps", "100000000000", "--max-work", "10000000000000", "--allow-read"]
DOC = os.environ.get("DOC", "/tmp/i25_doc.json")
DOC9 = os.environ.get("DOC9", "/tmp/i25_doc9.json")
OUT = "/tmp/i25_out.json"

CASES = {
    "log": [
        ("leash", L + ["--max-memory", "4G", "logreport.lsh", "/tmp/i25_access.log"]),
        ("perl", ["perl", "logreport.pl", "/tmp/i25_access.log"]),
        ("python3", ["python3", "logreport.py", "/tmp/i25_access.log"]),
    ],
    "jsonparse": [
        ("leash", L + ["--max-memory", "4G", "jsonparse.lsh", DOC]),
        ("python3", ["python3", "jsonparse.py", DOC]),
    ],
    "jsonparse9": [
        ("leash", L + ["--max-memory", "4G", "jsonparse.lsh", DOC9]),
        ("python3", ["python3", "jsonparse.py", DOC9]),
    ],
    "json": [
        ("leash", L + ["--max-memory", "4G", "jsonround.lsh", DOC]),
        ("python3", ["python3", "jsonround.py", DOC]),
    ],
    # read -> value -> written back to a file: the whole text (json.parse(file.read(..)),
    # file.write(.., json.stringify(v))) against chunks (json.read, json.write), and
    # CPython's json.load / json.dump
    "jsonfile": [
        ("leash", L + ["--allow-files", "--max-memory", "4G", "jsonfile.lsh", DOC, OUT]),
    ],
    "jsonstream": [
        ("leash", L + ["--allow-files", "--max-memory", "4G", "jsonstream.lsh", DOC, OUT]),
        ("python3", ["python3", "jsonstream.py", DOC, OUT]),
    ],
    "jsonread": [
        ("leash", L + ["--max-memory", "4G", "jsonread.lsh", DOC]),
    ],
    "sort": [
        ("leash", L + ["--max-memory", "4G", "sort.lsh"]),
        ("python3", ["python3", "sort.py"]),
    ],
    "map": [
        ("leash", L + ["--max-memory", "4G", "map.lsh"]),
        ("python3", ["python3", "map.py"]),
    ],
    "csv": [
        ("leash", L + ["--max-memory", "4G", "csvparse.lsh", "/tmp/i25_data.csv"]),
        ("python3", ["python3", "csvparse.py", "/tmp/i25_data.csv"]),
    ],
    "csvheader": [
        ("leash", L + ["--max-memory", "4G", "csvheader.lsh", "/tmp/i25_data.csv"]),
        ("python3", ["python3", "csvheader.py", "/tmp/i25_data.csv"]),
    ],
    # Below what each needs: exit 4 (`memory`), RSS under --max-memory + 64 MiB.
    "bounds": [
        ("leash log 32M", L + ["--max-memory", "32M", "logreport.lsh", "/tmp/i25_access.log"]),
        ("leash json 128M", L + ["--max-memory", "128M", "jsonround.lsh", DOC]),
        ("leash sort 64M", L + ["--max-memory", "64M", "sort.lsh"]),
        ("leash map 64M", L + ["--max-memory", "64M", "map.lsh"]),
        ("leash csv 128M", L + ["--max-memory", "128M", "csvparse.lsh", "/tmp/i25_data.csv"]),
        ("leash jsonstream 128M", L + ["--allow-files", "--max-memory", "128M", "jsonstream.lsh", DOC, OUT]),
        ("leash jsonread 128M", L + ["--max-memory", "128M", "jsonread.lsh", DOC]),
        ("leash jsonparse 128M", L + ["--max-memory", "128M", "jsonparse.lsh", DOC]),
        ("leash csvheader 128M", L + ["--max-memory", "128M", "csvheader.lsh", "/tmp/i25_data.csv"]),
    ],
}


def once(cmd):
    t = "/tmp/i25_runs_time"
    with open("/tmp/i25_runs_out", "wb") as out, open("/tmp/i25_runs_err", "wb") as err:
        subprocess.run(["/usr/bin/time", "-f", "%x %e %U %S %M", "-o", t, *cmd], stdout=out, stderr=err, cwd=HERE)
    x, e, u, s, m = open(t).read().split("\n")[-2].split()
    return int(x), float(e), float(u) + float(s), int(m)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    names = sys.argv[2:] or [c for c in CASES if c != "jsonparse9" or os.path.exists(DOC9)]
    print(f"{'case':<11} {'tool':<18} {'exit':>4} {'cpu s (min)':>11} {'wall s (min)':>12} {'peak RSS MiB':>12}  runs={runs}")
    for name in names:
        for tool, cmd in CASES[name]:
            rs = [once(cmd) for _ in range(1 if name == "bounds" else runs)]
            codes = sorted({r[0] for r in rs})
            print(
                f"{name:<11} {tool:<18} {','.join(map(str, codes)):>4} {min(r[2] for r in rs):>11.2f}"
                f" {min(r[1] for r in rs):>12.2f} {max(r[3] for r in rs) / 1024:>12.1f}",
                flush=True,
            )


main()
