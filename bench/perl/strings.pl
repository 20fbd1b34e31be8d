use strict;
use warnings;

my $n = @ARGV ? int($ARGV[0]) : 100000;
my $s = "";
for my $i (1 .. $n) {
    $s .= "x" . $i;
}
print length($s), "\n";
