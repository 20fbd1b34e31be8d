use strict;
use warnings;
use POSIX qw(floor);
use Text::ParseWords qw(parse_line);

# Perl's core has no CSV module (Text::CSV is on CPAN): Text::ParseWords (core) splits
# each line on commas outside quotes. Every record of rows.csv is one line.
open(my $f, "<", $ARGV[0]) or die "$ARGV[0]: $!";
my $header = <$f>;
my (%qty, %cents);
my ($rows, $noted) = (0, 0);
while (my $line = <$f>) {
    chomp $line;
    my @f = parse_line(",", 0, $line);
    my $c = $f[1];
    $qty{$c} += $f[3];
    $cents{$c} += floor($f[4] * 100 + 0.5);
    $rows++;
    $noted++ if defined $f[5] && $f[5] ne "";
}
print join(" ", $rows, $noted, map { "$_:$qty{$_}:$cents{$_}" } sort keys %qty), "\n";
