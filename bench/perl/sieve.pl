# Are We Fast Yet "Sieve": the primes up to 5000 by Eratosthenes' sieve (669 a run).
use strict;
use warnings;

sub sieve {
    my ($size) = @_;
    my @flags = (1) x $size;
    my $prime_count = 0;
    for my $i (2 .. $size) {
        if ($flags[$i - 1]) {
            $prime_count++;
            my $k = $i + $i;
            while ($k <= $size) {
                $flags[$k - 1] = 0;
                $k += $i;
            }
        }
    }
    return $prime_count;
}

my $n = $ARGV[0] // 100;
my $total = 0;
$total += sieve(5000) for 1 .. $n;
print "$total\n";
