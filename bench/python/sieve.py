# Are We Fast Yet "Sieve": the primes up to 5000 by Eratosthenes' sieve (669 a run).
import sys


def sieve(size):
    flags = [True] * size
    prime_count = 0
    for i in range(2, size + 1):
        if flags[i - 1]:
            prime_count += 1
            k = i + i
            while k <= size:
                flags[k - 1] = False
                k += i
    return prime_count


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    print(sum(sieve(5000) for _ in range(n)))


main()
