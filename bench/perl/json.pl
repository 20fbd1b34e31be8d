use strict;
use warnings;
use JSON::PP;

# Perl hashes do not keep insertion order. JSON::PP's canonical mode writes
# keys sorted, and the record keys id < name < tags sort into the order they
# were built in, so the text is exactly the compact JSON the other languages
# produce (same bytes, same length).
my $json = JSON::PP->new->canonical(1);

my $total_len = 0;
my $total_ids = 0;
for my $round (1 .. 20) {
    my @recs;
    for my $i (1 .. 2000) {
        push @recs, { id => $i, name => "name" . $i, tags => ["a", "b"] };
    }
    my $text = $json->encode(\@recs);
    $total_len += length($text);
    my $back = $json->decode($text);
    my $s = 0;
    for my $r (@$back) {
        $s += $r->{id};
    }
    $total_ids += $s;
}
print "$total_len $total_ids\n";
