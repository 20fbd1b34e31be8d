# Are We Fast Yet "Storage": build a tree of lists 7 deep, each inner node 4
# children, each leaf a list of 1 to 10 items (a random size); count the nodes
# (5461 a run).
import sys


class Random:
    def __init__(self):
        self.seed = 74755

    def next(self):
        self.seed = (self.seed * 1309 + 13849) & 65535
        return self.seed


class Storage:
    def __init__(self):
        self.count = 0
        self.random = Random()

    def build_tree_depth(self, depth):
        self.count += 1
        if depth == 1:
            return [None] * (self.random.next() % 10 + 1)
        return [self.build_tree_depth(depth - 1) for _ in range(4)]


def run():
    s = Storage()
    s.build_tree_depth(7)
    return s.count


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    print(sum(run() for _ in range(n)))


main()
