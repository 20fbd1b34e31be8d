# n-body (the Computer Language Benchmarks Game's): the Jovian planets, N steps of
# 0.01 (first argument; default 30000); the energy before and after, 9 decimals.
use strict;
use warnings;

use constant PI => 3.141592653589793;
use constant SOLAR_MASS => 4 * PI * PI;
use constant DAYS_PER_YEAR => 365.24;

my $d = DAYS_PER_YEAR;
my @bodies = (
    {x => 0, y => 0, z => 0, vx => 0, vy => 0, vz => 0, mass => SOLAR_MASS},
    {x => 4.84143144246472090e+00, y => -1.16032004402742839e+00, z => -1.03622044471123109e-01,
     vx => 1.66007664274403694e-03 * $d, vy => 7.69901118419740425e-03 * $d,
     vz => -6.90460016972063023e-05 * $d, mass => 9.54791938424326609e-04 * SOLAR_MASS},
    {x => 8.34336671824457987e+00, y => 4.12479856412430479e+00, z => -4.03523417114321381e-01,
     vx => -2.76742510726862411e-03 * $d, vy => 4.99852801234917238e-03 * $d,
     vz => 2.30417297573763929e-05 * $d, mass => 2.85885980666130812e-04 * SOLAR_MASS},
    {x => 1.28943695621391310e+01, y => -1.51111514016986312e+01, z => -2.23307578892655734e-01,
     vx => 2.96460137564761618e-03 * $d, vy => 2.37847173959480950e-03 * $d,
     vz => -2.96589568540237556e-05 * $d, mass => 4.36624404335156298e-05 * SOLAR_MASS},
    {x => 1.53796971148509165e+01, y => -2.59193146099879641e+01, z => 1.79258772950371181e-01,
     vx => 2.68067772490389322e-03 * $d, vy => 1.62824170038242295e-03 * $d,
     vz => -9.51592254519715870e-05 * $d, mass => 5.15138902046611451e-05 * SOLAR_MASS},
);

sub offset_momentum {
    my ($px, $py, $pz) = (0, 0, 0);
    for my $b (@bodies) {
        $px += $b->{vx} * $b->{mass};
        $py += $b->{vy} * $b->{mass};
        $pz += $b->{vz} * $b->{mass};
    }
    $bodies[0]{vx} = 0 - $px / SOLAR_MASS;
    $bodies[0]{vy} = 0 - $py / SOLAR_MASS;
    $bodies[0]{vz} = 0 - $pz / SOLAR_MASS;
}

sub energy {
    my $e = 0;
    my $n = @bodies;
    for my $i (0 .. $n - 1) {
        my $b = $bodies[$i];
        $e += 0.5 * $b->{mass} * ($b->{vx} * $b->{vx} + $b->{vy} * $b->{vy} + $b->{vz} * $b->{vz});
        for my $j ($i + 1 .. $n - 1) {
            my $c = $bodies[$j];
            my $dx = $b->{x} - $c->{x};
            my $dy = $b->{y} - $c->{y};
            my $dz = $b->{z} - $c->{z};
            $e -= ($b->{mass} * $c->{mass}) / sqrt($dx * $dx + $dy * $dy + $dz * $dz);
        }
    }
    return $e;
}

sub advance {
    my ($dt) = @_;
    my $n = @bodies;
    for my $i (0 .. $n - 1) {
        my $bi = $bodies[$i];
        for my $j ($i + 1 .. $n - 1) {
            my $bj = $bodies[$j];
            my $dx = $bi->{x} - $bj->{x};
            my $dy = $bi->{y} - $bj->{y};
            my $dz = $bi->{z} - $bj->{z};
            my $d2 = $dx * $dx + $dy * $dy + $dz * $dz;
            my $mag = $dt / ($d2 * sqrt($d2));
            my $mi = $bi->{mass} * $mag;
            my $mj = $bj->{mass} * $mag;
            $bi->{vx} -= $dx * $mj;
            $bi->{vy} -= $dy * $mj;
            $bi->{vz} -= $dz * $mj;
            $bj->{vx} += $dx * $mi;
            $bj->{vy} += $dy * $mi;
            $bj->{vz} += $dz * $mi;
        }
    }
    for my $b (@bodies) {
        $b->{x} += $dt * $b->{vx};
        $b->{y} += $dt * $b->{vy};
        $b->{z} += $dt * $b->{vz};
    }
}

my $steps = $ARGV[0] // 30000;
offset_momentum();
my $before = energy();
advance(0.01) for 1 .. $steps;
printf "%.9f %.9f\n", $before, energy();
