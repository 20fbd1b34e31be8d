# Are We Fast Yet "Permute": count the calls of a recursive permutation of 6
# items by swaps (8660 a run).
import sys


class Permute:
    def __init__(self):
        self.count = 0
        self.v = [0] * 6

    def swap(self, i, j):
        v = self.v
        v[i], v[j] = v[j], v[i]

    def permute(self, n):
        self.count += 1
        if n != 0:
            n1 = n - 1
            self.permute(n1)
            for i in range(n - 1, -1, -1):
                self.swap(n - 1, i)
                self.permute(n1)
                self.swap(n - 1, i)


def run():
    p = Permute()
    p.permute(6)
    return p.count


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    print(sum(run() for _ in range(n)))


main()
