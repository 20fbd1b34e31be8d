# fannkuch-redux (the Computer Language Benchmarks Game's) for n (first argument;
# default 9): the checksum and the most flips over all permutations of 1..n.
use strict;
use warnings;

sub fannkuch {
    my ($n) = @_;
    my @perm1 = (0 .. $n - 1);
    my @count = (0) x $n;
    my ($max_flips, $checksum, $perm_count) = (0, 0, 0);
    my $r = $n;
    while (1) {
        while ($r != 1) {
            $count[$r - 1] = $r;
            $r--;
        }
        my @perm = @perm1;
        my $flips = 0;
        my $k = $perm[0];
        while ($k) {
            @perm[0 .. $k] = reverse @perm[0 .. $k];
            $flips++;
            $k = $perm[0];
        }
        $max_flips = $flips if $flips > $max_flips;
        $checksum += $perm_count % 2 ? -$flips : $flips;
        # The next permutation: rotate the first r + 1 items, r counting up.
        while (1) {
            return "$checksum $max_flips" if $r == $n;
            my $perm0 = $perm1[0];
            @perm1[0 .. $r - 1] = @perm1[1 .. $r];
            $perm1[$r] = $perm0;
            $count[$r]--;
            last if $count[$r] > 0;
            $r++;
        }
        $perm_count++;
    }
}

print fannkuch($ARGV[0] // 9), "\n";
