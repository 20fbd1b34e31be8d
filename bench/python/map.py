import sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300000
    x = 42
    m = {}
    for _ in range(n):
        x = (x * 16807) % 2147483647
        k = "w" + str(x % 5000)
        m[k] = m.get(k, 0) + 1
    print(len(m), m["w42"])


main()
