import re
import sys

PAT = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)')


def main():
    n404 = bytes200 = lines = 0
    paths = {}
    for line in sys.stdin:
        m = PAT.match(line)
        lines += 1
        status = m.group(5)
        if status == "404":
            n404 += 1
        elif status == "200":
            bytes200 += int(m.group(6))
        p = m.group(4)
        paths[p] = paths.get(p, 0) + 1
    ranked = sorted(paths.items(), key=lambda kv: (-kv[1], kv[0]))
    out = [str(lines), str(n404), str(bytes200)] + ["%s:%d" % kv for kv in ranked[:3]]
    print(" ".join(out))


main()
