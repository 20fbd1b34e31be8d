"""Bytes a parsed record holds: the slope of `json.read`'s peak RSS between two documents
of the 100 MB document's records (gen.py's shape, ids of 8 digits as in most of it).

    python3 record_bytes.py            (LEASH defaults to the release build)

Prints the peak RSS of each and (difference) / (difference in records). The streaming
form holds the value and a chunk, so the slope is the value's bytes a record: the list
slot, the map and its values' box, the strings (WORKLOG, ninth session).
"""
import json
import os
import random
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
LEASH = os.environ.get("LEASH", os.path.join(HERE, "../../target/release/leash"))


def doc(n):
    p = f"/tmp/i25_records_{n}.json"
    if not os.path.exists(p):
        random.seed(7)
        with open(p, "w") as f:
            f.write("[")
            for i in range(n):
                k = 50_000_000 + i * 135
                d = {"id": k, "name": "user %d" % k, "email": "u%d@example.com" % k,
                     "score": random.random() * 100, "tags": ["a", "bb", "ccc"], "active": i % 3 == 0}
                f.write(("," if i else "") + json.dumps(d, separators=(",", ":")))
            f.write("]")
    return p


def peak(p):
    r = subprocess.run(["/usr/bin/time", "-f", "%M", LEASH, "--limit", "all=max", "--max-memory", "4G",
                        "--allow-read", os.path.join(HERE, "jsonread.lsh"), p],
                       capture_output=True, text=True)
    return int(r.stderr.strip().splitlines()[-1])


a, b = 200_000, 400_000
pa, pb = peak(doc(a)), peak(doc(b))
print(f"{a} records: {pa} KiB; {b} records: {pb} KiB; {(pb - pa) * 1024 / (b - a):.1f} bytes a record")
