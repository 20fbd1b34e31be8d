import csv
import math
import sys


def main():
    qty, cents = {}, {}
    rows = noted = 0
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            c = row["category"]
            qty[c] = qty.get(c, 0) + int(row["qty"])
            cents[c] = cents.get(c, 0) + math.floor(float(row["price"]) * 100 + 0.5)
            rows += 1
            if row["note"] != "":
                noted += 1
    out = [str(rows), str(noted)] + ["%s:%d:%d" % (c, qty[c], cents[c]) for c in sorted(qty)]
    print(" ".join(out))


main()
