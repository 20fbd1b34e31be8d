# A translate loop: a 50,000-character text of letters and spaces (a Park-Miller
# generator, seed 42) is translated character by character through a table
# (each letter moved 7 places on, a space kept) N times (first argument; default
# 20); prints the length and the first 30 characters of the result.
use strict;
use warnings;

sub make_text {
    my ($n) = @_;
    my $x = 42;
    my $text = "";
    for (1 .. $n) {
        $x = ($x * 16807) % 2147483647;
        my $c = $x % 27;
        $text .= $c == 26 ? " " : chr(97 + $c);
    }
    return $text;
}

sub translate {
    my ($text, $table) = @_;
    return join "", map { $table->{$_} } split //, $text;
}

my $rounds = $ARGV[0] // 20;
my %table = (" " => " ");
$table{chr(97 + $_)} = chr(97 + ($_ + 7) % 26) for 0 .. 25;
my $text = make_text(50000);
$text = translate($text, \%table) for 1 .. $rounds;
print length($text), " ", substr($text, 0, 30), "\n";
