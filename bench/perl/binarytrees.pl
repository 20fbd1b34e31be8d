# binary-trees (the Computer Language Benchmarks Game's) for depth N (first
# argument; default 12): build and check perfect binary trees; a node is an array
# [left, right], a leaf [] (no children). Prints the stretch tree's check, each
# depth's total check and the long-lived tree's check.
use strict;
use warnings;

sub make {
    my ($d) = @_;
    return [] if $d == 0;
    return [make($d - 1), make($d - 1)];
}

sub check {
    my ($t) = @_;
    return 1 unless @$t;
    return 1 + check($t->[0]) + check($t->[1]);
}

my $max_depth = $ARGV[0] // 12;
my $min_depth = 4;
$max_depth = $min_depth + 2 if $max_depth < $min_depth + 2;
my @out = (check(make($max_depth + 1)));
my $long_lived = make($max_depth);
for (my $d = $min_depth; $d <= $max_depth; $d += 2) {
    my $iterations = 2 ** ($max_depth - $d + $min_depth);
    my $c = 0;
    $c += check(make($d)) for 1 .. $iterations;
    push @out, $c;
}
push @out, check($long_lived);
print "@out\n";
