import sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    s = ""
    for i in range(1, n + 1):
        s += "x" + str(i)
    print(len(s))


main()
