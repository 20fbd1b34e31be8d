# Are We Fast Yet "List": Takeuchi's tail function on linked lists of 15, 10 and 6
# elements; the length of the result (10 a run).
import sys


class Element:
    __slots__ = ("val", "next")

    def __init__(self, val, next):
        self.val = val
        self.next = next


def make_list(length):
    if length == 0:
        return None
    return Element(length, make_list(length - 1))


def length_of(e):
    n = 0
    while e is not None:
        n += 1
        e = e.next
    return n


def is_shorter_than(x, y):
    while y is not None:
        if x is None:
            return True
        x = x.next
        y = y.next
    return False


def tail(x, y, z):
    if is_shorter_than(y, x):
        return tail(tail(x.next, y, z), tail(y.next, z, x), tail(z.next, x, y))
    return z


def run():
    return length_of(tail(make_list(15), make_list(10), make_list(6)))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    print(sum(run() for _ in range(n)))


main()
