# Are We Fast Yet "Richards": an operating-system task scheduler simulation (idle
# task, worker, two handlers, two devices passing packets); a run ends with 23246
# packets queued and 9297 holds. Packets and task control blocks are hashes that
# refer to each other (undef: no packet, no task); each task runs its kind's sub.
use strict;
use warnings;

use constant {IDLER => 1, WORKER => 2, HANDLER_A => 3, HANDLER_B => 4, DEVICE_A => 5,
              DEVICE_B => 6, DEVICE_PACKET => 0, WORK_PACKET => 1};

my (@tasks, $task_list, $current, $current_id, $queue_count, $hold_count);

sub new_packet {
    my ($link, $id, $kind) = @_;
    return {link => $link, id => $id, kind => $kind, datum => 1, data => [0, 0, 0, 0]};
}

sub append_packet {
    my ($packet, $head) = @_;
    $packet->{link} = undef;
    return $packet unless defined $head;
    my $mouse = $head;
    my $link = $mouse->{link};
    while (defined $link) {
        $mouse = $link;
        $link = $mouse->{link};
    }
    $mouse->{link} = $packet;
    return $head;
}

sub wait_task {
    $current->{waiting} = 1;
    return $current;
}

sub hold_self {
    $hold_count++;
    $current->{holding} = 1;
    return $current->{link};
}

sub release {
    my ($id) = @_;
    my $t = $tasks[$id];
    $t->{holding} = 0;
    return $t if $t->{priority} > $current->{priority};
    return $current;
}

sub queue_packet {
    my ($packet) = @_;
    my $t = $tasks[$packet->{id}];
    $queue_count++;
    $packet->{link} = undef;
    $packet->{id} = $current_id;
    if (!defined $t->{input}) {
        $t->{input} = $packet;
        $t->{pending} = 1;
        return $t if $t->{priority} > $current->{priority};
    } else {
        $t->{input} = append_packet($packet, $t->{input});
    }
    return $current;
}

sub run_device {
    my ($t, $packet) = @_;
    if (!defined $packet) {
        $packet = $t->{device_pending};
        return wait_task() unless defined $packet;
        $t->{device_pending} = undef;
        return queue_packet($packet);
    }
    $t->{device_pending} = $packet;
    return hold_self();
}

sub run_handler {
    my ($t, $packet) = @_;
    if (defined $packet) {
        if ($packet->{kind} == WORK_PACKET) {
            $t->{work_in} = append_packet($packet, $t->{work_in});
        } else {
            $t->{device_in} = append_packet($packet, $t->{device_in});
        }
    }
    my $wp = $t->{work_in};
    return wait_task() unless defined $wp;
    my $count = $wp->{datum};
    if ($count > 4) {
        $t->{work_in} = $wp->{link};
        return queue_packet($wp);
    }
    my $dp = $t->{device_in};
    return wait_task() unless defined $dp;
    $t->{device_in} = $dp->{link};
    $dp->{datum} = $wp->{data}[$count - 1];
    $wp->{datum} = $count + 1;
    return queue_packet($dp);
}

sub run_idler {
    my ($t) = @_;
    $t->{count}--;
    return hold_self() if $t->{count} == 0;
    if ($t->{control} % 2 == 0) {
        $t->{control} = $t->{control} >> 1;
        return release(DEVICE_A);
    }
    $t->{control} = (($t->{control} - 1) >> 1) ^ 53256;
    return release(DEVICE_B);
}

sub run_worker {
    my ($t, $packet) = @_;
    return wait_task() unless defined $packet;
    $t->{destination} = $t->{destination} == HANDLER_A ? HANDLER_B : HANDLER_A;
    $packet->{id} = $t->{destination};
    $packet->{datum} = 1;
    for my $i (0 .. 3) {
        $t->{count}++;
        $t->{count} = 1 if $t->{count} > 26;
        $packet->{data}[$i] = 65 + $t->{count} - 1;
    }
    return queue_packet($packet);
}

sub create_task {
    my ($id, $fn, $priority, $work, $state) = @_;
    my $t = {link => $task_list, id => $id, fn => $fn, priority => $priority, input => $work,
             pending => ($state eq "waiting_with_packet" ? 1 : 0),
             waiting => ($state ne "running" ? 1 : 0), holding => 0,
             control => 1, count => ($fn == \&run_idler ? 10000 : 0), destination => HANDLER_A};
    $task_list = $t;
    $tasks[$id] = $t;
}

sub run_task {
    my ($t) = @_;
    my $packet;
    if ($t->{pending} && $t->{waiting} && !$t->{holding}) {
        $packet = $t->{input};
        $t->{input} = $packet->{link};
        $t->{pending} = defined $t->{input} ? 1 : 0;
        $t->{waiting} = 0;
        $t->{holding} = 0;
    }
    return $t->{fn}->($t, $packet);
}

sub schedule {
    $current = $task_list;
    while (defined $current) {
        if ($current->{holding} || (!$current->{pending} && $current->{waiting})) {
            $current = $current->{link};
        } else {
            $current_id = $current->{id};
            $current = run_task($current);
        }
    }
}

sub run {
    @tasks = ();
    ($task_list, $current, $current_id, $queue_count, $hold_count) = (undef, undef, 0, 0, 0);
    create_task(IDLER, \&run_idler, 0, undef, "running");
    my $q = new_packet(undef, WORKER, WORK_PACKET);
    $q = new_packet($q, WORKER, WORK_PACKET);
    create_task(WORKER, \&run_worker, 1000, $q, "waiting_with_packet");
    $q = new_packet(undef, DEVICE_A, DEVICE_PACKET);
    $q = new_packet($q, DEVICE_A, DEVICE_PACKET);
    $q = new_packet($q, DEVICE_A, DEVICE_PACKET);
    create_task(HANDLER_A, \&run_handler, 2000, $q, "waiting_with_packet");
    $q = new_packet(undef, DEVICE_B, DEVICE_PACKET);
    $q = new_packet($q, DEVICE_B, DEVICE_PACKET);
    $q = new_packet($q, DEVICE_B, DEVICE_PACKET);
    create_task(HANDLER_B, \&run_handler, 3000, $q, "waiting_with_packet");
    create_task(DEVICE_A, \&run_device, 4000, undef, "waiting");
    create_task(DEVICE_B, \&run_device, 5000, undef, "waiting");
    schedule();
    return "$queue_count $hold_count";
}

my $n = $ARGV[0] // 2;
my $result = "";
$result = run() for 1 .. $n;
print "$result\n";
