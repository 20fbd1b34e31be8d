# Are We Fast Yet "Bounce": 100 balls bounce in a 500x500 box for 50 steps; the
# number of bounces (1331 a run). A ball is a hash; bounce() changes it in place.
use strict;
use warnings;

my $seed;

sub next_random {
    $seed = ($seed * 1309 + 13849) & 65535;
    return $seed;
}

sub bounce {
    my ($b) = @_;
    my $bounced = 0;
    $b->{x} += $b->{xv};
    $b->{y} += $b->{yv};
    if ($b->{x} > 500) {
        $b->{x} = 500;
        $b->{xv} = 0 - abs($b->{xv});
        $bounced = 1;
    }
    if ($b->{x} < 0) {
        $b->{x} = 0;
        $b->{xv} = abs($b->{xv});
        $bounced = 1;
    }
    if ($b->{y} > 500) {
        $b->{y} = 500;
        $b->{yv} = 0 - abs($b->{yv});
        $bounced = 1;
    }
    if ($b->{y} < 0) {
        $b->{y} = 0;
        $b->{yv} = abs($b->{yv});
        $bounced = 1;
    }
    return $bounced;
}

sub run {
    $seed = 74755;
    my @balls;
    for (1 .. 100) {
        my %b;
        $b{x} = next_random() % 500;
        $b{y} = next_random() % 500;
        $b{xv} = next_random() % 300 - 150;
        $b{yv} = next_random() % 300 - 150;
        push @balls, \%b;
    }
    my $bounces = 0;
    for (1 .. 50) {
        for my $b (@balls) {
            $bounces++ if bounce($b);
        }
    }
    return $bounces;
}

my $n = $ARGV[0] // 50;
my $total = 0;
$total += run() for 1 .. $n;
print "$total\n";
