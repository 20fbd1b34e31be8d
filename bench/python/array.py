def main():
    x = 42
    total = 0
    for _ in range(10):
        xs = []
        for _ in range(16000):
            x = (x * 16807) % 2147483647
            xs.append(x)
        ys = sorted(xs)
        total = (total + ys[0] + ys[8000] + ys[15999]) % 1000000007
    print(total)


main()
