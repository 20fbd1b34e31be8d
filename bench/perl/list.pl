# Are We Fast Yet "List": Takeuchi's tail function on linked lists of 15, 10 and 6
# elements; the length of the result (10 a run). An element is a hash {val, next}.
use strict;
use warnings;

sub make_list {
    my ($length) = @_;
    return undef if $length == 0;
    return {val => $length, next => make_list($length - 1)};
}

sub length_of {
    my ($e) = @_;
    my $n = 0;
    while (defined $e) {
        $n++;
        $e = $e->{next};
    }
    return $n;
}

sub is_shorter_than {
    my ($x, $y) = @_;
    while (defined $y) {
        return 1 unless defined $x;
        $x = $x->{next};
        $y = $y->{next};
    }
    return 0;
}

sub tail {
    my ($x, $y, $z) = @_;
    if (is_shorter_than($y, $x)) {
        return tail(tail($x->{next}, $y, $z), tail($y->{next}, $z, $x), tail($z->{next}, $x, $y));
    }
    return $z;
}

sub run {
    return length_of(tail(make_list(15), make_list(10), make_list(6)));
}

my $n = $ARGV[0] // 40;
my $total = 0;
$total += run() for 1 .. $n;
print "$total\n";
