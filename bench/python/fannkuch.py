# fannkuch-redux (the Computer Language Benchmarks Game's) for n (first argument;
# default 9): the checksum and the most flips over all permutations of 1..n.
import sys


def fannkuch(n):
    perm1 = list(range(n))
    count = [0] * n
    max_flips = checksum = perm_count = 0
    r = n
    while True:
        while r != 1:
            count[r - 1] = r
            r -= 1
        perm = perm1[:]
        flips = 0
        k = perm[0]
        while k:
            perm[:k + 1] = perm[k::-1]
            flips += 1
            k = perm[0]
        if flips > max_flips:
            max_flips = flips
        checksum += -flips if perm_count % 2 else flips
        # The next permutation: rotate the first r + 1 items, r counting up.
        while True:
            if r == n:
                return "%d %d" % (checksum, max_flips)
            perm0 = perm1[0]
            perm1[:r] = perm1[1:r + 1]
            perm1[r] = perm0
            count[r] -= 1
            if count[r] > 0:
                break
            r += 1
        perm_count += 1


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    print(fannkuch(n))


main()
