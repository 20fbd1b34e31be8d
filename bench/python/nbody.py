# n-body (the Computer Language Benchmarks Game's): the Jovian planets, N steps of
# 0.01 (first argument; default 30000); the energy before and after, 9 decimals.
import sys
from math import sqrt

PI = 3.141592653589793
SOLAR_MASS = 4 * PI * PI
DAYS_PER_YEAR = 365.24


class Body:
    __slots__ = ("x", "y", "z", "vx", "vy", "vz", "mass")

    def __init__(self, x, y, z, vx, vy, vz, mass):
        self.x, self.y, self.z = x, y, z
        self.vx, self.vy, self.vz = vx, vy, vz
        self.mass = mass


def make_bodies():
    d, m = DAYS_PER_YEAR, SOLAR_MASS
    return [
        Body(0, 0, 0, 0, 0, 0, SOLAR_MASS),
        Body(4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
             1.66007664274403694e-03 * d, 7.69901118419740425e-03 * d,
             -6.90460016972063023e-05 * d, 9.54791938424326609e-04 * m),
        Body(8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
             -2.76742510726862411e-03 * d, 4.99852801234917238e-03 * d,
             2.30417297573763929e-05 * d, 2.85885980666130812e-04 * m),
        Body(1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
             2.96460137564761618e-03 * d, 2.37847173959480950e-03 * d,
             -2.96589568540237556e-05 * d, 4.36624404335156298e-05 * m),
        Body(1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
             2.68067772490389322e-03 * d, 1.62824170038242295e-03 * d,
             -9.51592254519715870e-05 * d, 5.15138902046611451e-05 * m),
    ]


def offset_momentum(bodies):
    px = py = pz = 0
    for b in bodies:
        px += b.vx * b.mass
        py += b.vy * b.mass
        pz += b.vz * b.mass
    bodies[0].vx = 0 - px / SOLAR_MASS
    bodies[0].vy = 0 - py / SOLAR_MASS
    bodies[0].vz = 0 - pz / SOLAR_MASS


def energy(bodies):
    e = 0
    n = len(bodies)
    for i in range(n):
        b = bodies[i]
        e += 0.5 * b.mass * (b.vx * b.vx + b.vy * b.vy + b.vz * b.vz)
        for j in range(i + 1, n):
            c = bodies[j]
            dx = b.x - c.x
            dy = b.y - c.y
            dz = b.z - c.z
            e -= (b.mass * c.mass) / sqrt(dx * dx + dy * dy + dz * dz)
    return e


def advance(bodies, dt):
    n = len(bodies)
    for i in range(n):
        bi = bodies[i]
        for j in range(i + 1, n):
            bj = bodies[j]
            dx = bi.x - bj.x
            dy = bi.y - bj.y
            dz = bi.z - bj.z
            d2 = dx * dx + dy * dy + dz * dz
            mag = dt / (d2 * sqrt(d2))
            mi = bi.mass * mag
            mj = bj.mass * mag
            bi.vx -= dx * mj
            bi.vy -= dy * mj
            bi.vz -= dz * mj
            bj.vx += dx * mi
            bj.vy += dy * mi
            bj.vz += dz * mi
    for b in bodies:
        b.x += dt * b.vx
        b.y += dt * b.vy
        b.z += dt * b.vz


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    bodies = make_bodies()
    offset_momentum(bodies)
    before = energy(bodies)
    for _ in range(steps):
        advance(bodies, 0.01)
    print("%.9f %.9f" % (before, energy(bodies)))


main()
