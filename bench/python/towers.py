# Are We Fast Yet "Towers": the towers of Hanoi with 13 disks (8191 moves a run).
# Each pile is a list of disk sizes, its top last.
import sys


class Towers:
    def __init__(self):
        self.piles = [[], [], []]
        self.moves_done = 0

    def push_disk(self, size, pile):
        top = self.piles[pile]
        if top and size >= top[-1]:
            raise ValueError("Cannot put a big disk on a smaller one")
        top.append(size)

    def pop_disk_from(self, pile):
        top = self.piles[pile]
        if not top:
            raise ValueError("Attempting to remove a disk from an empty pile")
        return top.pop()

    def move_top_disk(self, from_pile, to_pile):
        self.push_disk(self.pop_disk_from(from_pile), to_pile)
        self.moves_done += 1

    def move_disks(self, disks, from_pile, to_pile):
        if disks == 1:
            self.move_top_disk(from_pile, to_pile)
        else:
            other_pile = 3 - from_pile - to_pile
            self.move_disks(disks - 1, from_pile, other_pile)
            self.move_top_disk(from_pile, to_pile)
            self.move_disks(disks - 1, other_pile, to_pile)


def run():
    t = Towers()
    for i in range(13, 0, -1):
        t.push_disk(i, 0)
    t.moves_done = 0
    t.move_disks(13, 0, 1)
    return t.moves_done


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    print(sum(run() for _ in range(n)))


main()
