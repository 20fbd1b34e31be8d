# Are We Fast Yet "Permute": count the calls of a recursive permutation of 6
# items by swaps (8660 a run).
use strict;
use warnings;

my ($count, @v);

sub swap {
    my ($i, $j) = @_;
    @v[$i, $j] = @v[$j, $i];
}

sub permute {
    my ($n) = @_;
    $count++;
    if ($n != 0) {
        my $n1 = $n - 1;
        permute($n1);
        for (my $i = $n - 1; $i >= 0; $i--) {
            swap($n - 1, $i);
            permute($n1);
            swap($n - 1, $i);
        }
    }
}

sub run {
    $count = 0;
    @v = (0) x 6;
    permute(6);
    return $count;
}

my $n = $ARGV[0] // 60;
my $total = 0;
$total += run() for 1 .. $n;
print "$total\n";
