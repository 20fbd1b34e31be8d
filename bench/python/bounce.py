# Are We Fast Yet "Bounce": 100 balls bounce in a 500x500 box for 50 steps; the
# number of bounces (1331 a run).
import sys


class Random:
    def __init__(self):
        self.seed = 74755

    def next(self):
        self.seed = (self.seed * 1309 + 13849) & 65535
        return self.seed


class Ball:
    __slots__ = ("x", "y", "xv", "yv")

    def __init__(self, random):
        self.x = random.next() % 500
        self.y = random.next() % 500
        self.xv = random.next() % 300 - 150
        self.yv = random.next() % 300 - 150

    def bounce(self):
        bounced = False
        self.x += self.xv
        self.y += self.yv
        if self.x > 500:
            self.x = 500
            self.xv = -abs(self.xv)
            bounced = True
        if self.x < 0:
            self.x = 0
            self.xv = abs(self.xv)
            bounced = True
        if self.y > 500:
            self.y = 500
            self.yv = -abs(self.yv)
            bounced = True
        if self.y < 0:
            self.y = 0
            self.yv = abs(self.yv)
            bounced = True
        return bounced


def run():
    random = Random()
    balls = [Ball(random) for _ in range(100)]
    bounces = 0
    for _ in range(50):
        for ball in balls:
            if ball.bounce():
                bounces += 1
    return bounces


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    print(sum(run() for _ in range(n)))


main()
