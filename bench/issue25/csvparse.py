import csv, sys
with open(sys.argv[1], newline="") as f:
    rows = list(csv.reader(f))
print(len(rows))
