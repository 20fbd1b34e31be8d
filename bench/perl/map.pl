use strict;
use warnings;

my $n = @ARGV ? int($ARGV[0]) : 300000;
my $x = 42;
my %m;
for my $i (1 .. $n) {
    $x = ($x * 16807) % 2147483647;
    $m{"w" . ($x % 5000)}++;
}
print scalar(keys %m), " ", $m{w42}, "\n";
