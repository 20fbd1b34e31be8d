# A translate loop: a 50,000-character text of letters and spaces (a Park-Miller
# generator, seed 42) is translated character by character through a table
# (each letter moved 7 places on, a space kept) N times (first argument; default
# 20); prints the length and the first 30 characters of the result.
import sys


def make_text(n):
    x = 42
    out = []
    for _ in range(n):
        x = (x * 16807) % 2147483647
        c = x % 27
        out.append(" " if c == 26 else chr(97 + c))
    return "".join(out)


def translate(text, table):
    return "".join([table[c] for c in text])


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    table = {" ": " "}
    for i in range(26):
        table[chr(97 + i)] = chr(97 + (i + 7) % 26)
    text = make_text(50000)
    for _ in range(rounds):
        text = translate(text, table)
    print(len(text), text[:30])


main()
