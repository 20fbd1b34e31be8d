use strict;
use warnings;

my $s = 0;
my $i = 1;
while ($i <= 3000000) {
    $s += ($i * $i) % 7;
    $i++;
}
print "$s\n";
