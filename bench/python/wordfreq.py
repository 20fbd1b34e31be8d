import sys


def main():
    counts = {}
    total = 0
    for line in sys.stdin:
        for w in line.rstrip("\n").lower().split(" "):
            counts[w] = counts.get(w, 0) + 1
            total += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    out = [str(total), str(len(counts))] + ["%s:%d" % kv for kv in ranked[:5]]
    print(" ".join(out))


main()
