import random
random.seed(1)
xs = [random.randint(0, 2000000000) for _ in range(10000000)]
ys = sorted(xs)
print(ys[0] <= ys[1], len(ys))
