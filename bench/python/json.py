import sys

# This file is named json.py: drop its own directory from the path so that
# "import json" finds the standard library module, not this script.
del sys.path[0]
import json  # noqa: E402


def main():
    total_len = 0
    total_ids = 0
    for _ in range(20):
        recs = []
        for i in range(1, 2001):
            recs.append({"id": i, "name": "name" + str(i), "tags": ["a", "b"]})
        text = json.dumps(recs, separators=(",", ":"))
        total_len += len(text)
        back = json.loads(text)
        s = 0
        for r in back:
            s += r["id"]
        total_ids += s
    print(total_len, total_ids)


main()
