use strict;
use warnings;

local $/;
my $s = <STDIN>;
my $total = 0;
for my $round (1 .. 30) {
    (my $r = $s) =~ s/ka/KA/g;
    $total += length $r;
    $total += length join(" | ", split(/\n/, $s, -1));
    $total += length uc $s;
    $total += index($s, "zzz");
    $total += index($s, "ter ter ter");
}
print "$total\n";
