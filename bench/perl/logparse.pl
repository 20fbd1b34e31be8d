use strict;
use warnings;

my ($n404, $bytes200, $lines) = (0, 0, 0);
my %paths;
while (my $line = <STDIN>) {
    $line =~ /^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)/ or die "no match";
    $lines++;
    my ($path, $status, $bytes) = ($4, $5, $6);
    if ($status eq "404") { $n404++ }
    elsif ($status eq "200") { $bytes200 += $bytes }
    $paths{$path}++;
}
my @ranked = sort { $paths{$b} <=> $paths{$a} || $a cmp $b } keys %paths;
print join(" ", $lines, $n404, $bytes200, map { "$_:$paths{$_}" } @ranked[0 .. 2]), "\n";
