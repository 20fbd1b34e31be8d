import re, sys
pat = re.compile(r'^(\S+) \S+ \S+ \[[^\]]+\] "[A-Z]+ \S+ [^"]*" (\d{3}) (\d+)')
c, b = {}, {}
with open(sys.argv[1], "rb") as f:
    for line in f:
        m = pat.match(line.decode())
        if m:
            k = m.group(2)
            c[k] = c.get(k, 0) + 1
            b[k] = b.get(k, 0) + int(m.group(3))
for k in sorted(c):
    print(k, c[k], b[k])
