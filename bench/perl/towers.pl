# Are We Fast Yet "Towers": the towers of Hanoi with 13 disks (8191 moves a run).
# Each pile is an array of disk sizes, its top last.
use strict;
use warnings;

my (@piles, $moves_done);

sub push_disk {
    my ($size, $pile) = @_;
    my $p = $piles[$pile];
    die "Cannot put a big disk on a smaller one\n" if @$p && $size >= $p->[-1];
    push @$p, $size;
}

sub pop_disk_from {
    my ($pile) = @_;
    my $p = $piles[$pile];
    die "Attempting to remove a disk from an empty pile\n" unless @$p;
    return pop @$p;
}

sub move_top_disk {
    my ($from_pile, $to_pile) = @_;
    push_disk(pop_disk_from($from_pile), $to_pile);
    $moves_done++;
}

sub move_disks {
    my ($disks, $from_pile, $to_pile) = @_;
    if ($disks == 1) {
        move_top_disk($from_pile, $to_pile);
    } else {
        my $other_pile = 3 - $from_pile - $to_pile;
        move_disks($disks - 1, $from_pile, $other_pile);
        move_top_disk($from_pile, $to_pile);
        move_disks($disks - 1, $other_pile, $to_pile);
    }
}

sub run {
    @piles = ([], [], []);
    push_disk($_, 0) for reverse 1 .. 13;
    $moves_done = 0;
    move_disks(13, 0, 1);
    return $moves_done;
}

my $n = $ARGV[0] // 30;
my $total = 0;
$total += run() for 1 .. $n;
print "$total\n";
