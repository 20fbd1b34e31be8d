import sys


def main():
    s = sys.stdin.read()
    total = 0
    for _ in range(30):
        total += len(s.replace("ka", "KA"))
        total += len(" | ".join(s.split("\n")))
        total += len(s.upper())
        total += s.find("zzz")
        total += s.find("ter ter ter")
    print(total)


main()
