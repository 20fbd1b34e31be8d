# binary-trees (the Computer Language Benchmarks Game's) for depth N (first
# argument; default 12): build and check perfect binary trees; a node is a tuple
# (left, right), a leaf (None, None). Prints the stretch tree's check, each depth's
# total check and the long-lived tree's check.
import sys


def make(d):
    if d == 0:
        return (None, None)
    return (make(d - 1), make(d - 1))


def check(t):
    left, right = t
    if left is None:
        return 1
    return 1 + check(left) + check(right)


def main():
    max_depth = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    min_depth = 4
    max_depth = max(min_depth + 2, max_depth)
    out = [check(make(max_depth + 1))]
    long_lived = make(max_depth)
    for d in range(min_depth, max_depth + 1, 2):
        iterations = 2 ** (max_depth - d + min_depth)
        out.append(sum(check(make(d)) for _ in range(iterations)))
    out.append(check(long_lived))
    print(" ".join(map(str, out)))


main()
