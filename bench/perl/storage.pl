# Are We Fast Yet "Storage": build a tree of arrays 7 deep, each inner node 4
# children, each leaf an array of 1 to 10 items (a random size); count the nodes
# (5461 a run).
use strict;
use warnings;

my ($seed, $count);

sub next_random {
    $seed = ($seed * 1309 + 13849) & 65535;
    return $seed;
}

sub build_tree_depth {
    my ($depth) = @_;
    $count++;
    if ($depth == 1) {
        return [(undef) x (next_random() % 10 + 1)];
    }
    return [map { build_tree_depth($depth - 1) } 1 .. 4];
}

sub run {
    $seed = 74755;
    $count = 0;
    build_tree_depth(7);
    return $count;
}

my $n = $ARGV[0] // 40;
my $total = 0;
$total += run() for 1 .. $n;
print "$total\n";
