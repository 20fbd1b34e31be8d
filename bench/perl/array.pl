use strict;
use warnings;

my $x = 42;
my $total = 0;
for my $round (1 .. 10) {
    my @xs;
    for my $i (1 .. 16000) {
        $x = ($x * 16807) % 2147483647;
        push @xs, $x;
    }
    my @ys = sort { $a <=> $b } @xs;
    $total = ($total + $ys[0] + $ys[8000] + $ys[15999]) % 1000000007;
}
print "$total\n";
