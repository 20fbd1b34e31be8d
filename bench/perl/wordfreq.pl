use strict;
use warnings;

my %counts;
my $total = 0;
while (my $line = <STDIN>) {
    chomp $line;
    for my $w (split / /, lc $line) {
        $counts{$w}++;
        $total++;
    }
}
my @ranked = sort { $counts{$b} <=> $counts{$a} || $a cmp $b } keys %counts;
my @out = ($total, scalar(keys %counts), map { "$_:$counts{$_}" } @ranked[0 .. 4]);
print join(" ", @out), "\n";
