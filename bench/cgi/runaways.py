#!/usr/bin/env python3
"""The issue's runaway target (issue 29): 200 concurrent runaway scripts sent straight to
`leash-cgi --fastcgi` (a unix socket; `max_workers = 16`, `queue = 400`,
`max_time_ms = 1000`) must all end in 504 while the server keeps answering (a GET_VALUES
and a page during the run, a page after it); afterwards no worker, no TMPDIR and no extra
descriptor is left. Usage:

  python3 bench/cgi/runaways.py [--bin target/quick] [-n 200]

(The other target, 20,000 requests at -c 64 through Apache with no failure and nothing
leaked, is `bench/cgi/run.py --only "FastCGI, fork" -n 20000 -c 64`.)
"""
import argparse
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import fcgi_client as fc  # noqa: E402


def params(root, name):
    return {"SCRIPT_FILENAME": f"{root}/{name}", "REQUEST_METHOD": "GET", "QUERY_STRING": "",
            "SERVER_PROTOCOL": "HTTP/1.1", "GATEWAY_INTERFACE": "CGI/1.1"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target" / "quick"))
    ap.add_argument("-n", type=int, default=200)
    a = ap.parse_args()
    base = pathlib.Path(tempfile.mkdtemp(prefix="leash-runaways-"))
    try:
        www = base / "www"
        www.mkdir()
        (www / "loop.lsh").write_text("x = 0\nwhile true\n  x = x + 1\nend\n")
        (www / "page.lsh").write_text('import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint("ok")\n')
        conf = base / "leash-cgi.toml"
        conf.write_text(f'root = "{www}"\nmax_time_ms = 1000\nmax_steps = 100000000000\nmax_work = 10000000000000\n'
                        'max_workers = 16\nqueue = 400\n')
        sock = str(base / "fcgi.sock")
        log = open(base / "log", "wb")
        proc = subprocess.Popen([f"{a.bin}/leash-cgi", "--fastcgi", f"unix:{sock}"],
                                env={"LEASH_CGI_CONFIG": str(conf), "PATH": "/usr/bin:/bin"}, stderr=log)
        end = time.monotonic() + 20
        while not os.path.exists(sock) and time.monotonic() < end:
            time.sleep(0.05)
        fc.request(sock, params(www, "page.lsh"))
        time.sleep(0.5)  # (the server closes its end of that connection after answering)
        fds0 = len(os.listdir(f"/proc/{proc.pid}/fd"))
        statuses, answers = [], []
        lock = threading.Lock()

        def runaway():
            try:
                out, _app, _proto, _ = fc.request(sock, params(www, "loop.lsh"), timeout=120)
                st = fc.split_http(out)[0]
            except Exception as e:  # noqa: BLE001
                st = f"error {e}"
            with lock:
                statuses.append(st)

        t0 = time.monotonic()
        threads = [threading.Thread(target=runaway) for _ in range(a.n)]
        for t in threads:
            t.start()
        # The server answers while they run: GET_VALUES and a page, every second.
        while any(t.is_alive() for t in threads):
            time.sleep(1)
            try:
                s = fc.connect(sock, 10)
                s.sendall(fc.record(fc.GET_VALUES, 0, fc.pairs({"FCGI_MPXS_CONNS": ""})))
                kind = fc.read_record(s)[0]
                s.close()
                answers.append(("get_values", kind == fc.GET_VALUES_RESULT, round(time.monotonic() - t0, 1)))
            except Exception as e:  # noqa: BLE001
                answers.append(("get_values", f"error {e}", round(time.monotonic() - t0, 1)))
        for t in threads:
            t.join()
        took = time.monotonic() - t0
        after = fc.split_http(fc.request(sock, params(www, "page.lsh"))[0])[0]
        time.sleep(1)
        kids = subprocess.run(["ps", "--ppid", str(proc.pid), "-o", "pid="], capture_output=True,
                              text=True).stdout.split()
        workers = subprocess.run(["ps", "--ppid", ",".join(kids) or "1", "-o", "pid="], capture_output=True,
                                 text=True).stdout.split() if kids else []
        tmp = pathlib.Path(tempfile.gettempdir()) / f"leash-cgi-{proc.pid}"
        left = len(os.listdir(tmp)) if tmp.exists() else 0
        fds1 = len(os.listdir(f"/proc/{proc.pid}/fd"))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        counts = {}
        for s in statuses:
            counts[s] = counts.get(s, 0) + 1
        ok_answers = sum(1 for _, ok, _ in answers if ok is True)
        print(f"{a.n} runaways: statuses {counts} in {took:.1f} s; during the run {ok_answers} of "
              f"{len(answers)} GET_VALUES answered; a page after: {after}; warm processes {len(kids)}, "
              f"workers left {len(workers)}, TMPDIRs left {left}, descriptors {fds0} before, {fds1} after; "
              f"server exit {proc.returncode}")
        good = counts == {504: a.n} and ok_answers == len(answers) and after == 200 and not workers \
            and not left and fds1 <= fds0 and proc.returncode == 0
        sys.exit(0 if good else 1)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
