import os
import sys

# This file is named jsonbig.py, but keep the standard module first anyway.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import json  # noqa: E402


def main():
    text = sys.stdin.read()
    total = 0
    for _ in range(20):
        out = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
        total += len(out)
    print(total)


main()
