def main():
    s = 0
    i = 1
    while i <= 3000000:
        s += (i * i) % 7
        i += 1
    print(s)


main()
