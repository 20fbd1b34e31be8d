# Are We Fast Yet "Queens": place 8 queens by backtracking, 10 times a run; the
# number of successful placements.
import sys


class Queens:
    def __init__(self):
        self.free_rows = [True] * 8
        self.free_maxs = [True] * 16
        self.free_mins = [True] * 16
        self.queen_rows = [-1] * 8

    def get_row_column(self, r, c):
        return self.free_rows[r] and self.free_maxs[c + r] and self.free_mins[c - r + 7]

    def set_row_column(self, r, c, v):
        self.free_rows[r] = v
        self.free_maxs[c + r] = v
        self.free_mins[c - r + 7] = v

    def place_queen(self, c):
        for r in range(8):
            if self.get_row_column(r, c):
                self.queen_rows[r] = c
                self.set_row_column(r, c, False)
                if c == 7:
                    return True
                if self.place_queen(c + 1):
                    return True
                self.set_row_column(r, c, True)
        return False


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    solved = 0
    for _ in range(n):
        for _ in range(10):
            if Queens().place_queen(0):
                solved += 1
    print(solved)


main()
