# Are We Fast Yet "Queens": place 8 queens by backtracking, 10 times a run; the
# number of successful placements.
use strict;
use warnings;

my (@free_rows, @free_maxs, @free_mins, @queen_rows);

sub get_row_column {
    my ($r, $c) = @_;
    return $free_rows[$r] && $free_maxs[$c + $r] && $free_mins[$c - $r + 7];
}

sub set_row_column {
    my ($r, $c, $v) = @_;
    $free_rows[$r] = $v;
    $free_maxs[$c + $r] = $v;
    $free_mins[$c - $r + 7] = $v;
}

sub place_queen {
    my ($c) = @_;
    for my $r (0 .. 7) {
        if (get_row_column($r, $c)) {
            $queen_rows[$r] = $c;
            set_row_column($r, $c, 0);
            return 1 if $c == 7;
            return 1 if place_queen($c + 1);
            set_row_column($r, $c, 1);
        }
    }
    return 0;
}

sub queens {
    @free_rows = (1) x 8;
    @free_maxs = (1) x 16;
    @free_mins = (1) x 16;
    @queen_rows = (-1) x 8;
    return place_queen(0);
}

my $n = $ARGV[0] // 100;
my $solved = 0;
for (1 .. $n) {
    for (1 .. 10) {
        $solved++ if queens();
    }
}
print "$solved\n";
