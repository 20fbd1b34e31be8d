# Are We Fast Yet "Json": a hand-written recursive-descent JSON parser (in the manner
# of minimal-json) parses stdin (ops.json, ~22 KB) N times (first argument; default
# 40). Prints the number of operations and the objects, arrays, strings, numbers and
# literals of one parse. Numbers are kept as their text, as in the original.
use strict;
use warnings;

my %ESCAPES = ('"' => '"', '/' => '/', '\\' => '\\', b => "\b", f => "\f", n => "\n",
               r => "\r", t => "\t");
my ($src, $pos, $cur, %counts);

sub read_char {
    $pos++;
    $cur = $pos < length($src) ? substr($src, $pos, 1) : "";
}

sub skip_white_space {
    read_char() while $cur eq " " || $cur eq "\t" || $cur eq "\n" || $cur eq "\r";
}

sub is_digit {
    return $cur ge "0" && $cur le "9" && $cur ne "";
}

sub read_required {
    my ($ch) = @_;
    die "expected '$ch' at $pos\n" if $cur ne $ch;
    read_char();
}

sub read_value {
    if ($cur eq "n") {
        read_char(); read_required($_) for qw(u l l);
        $counts{literals}++;
        return undef;
    } elsif ($cur eq "t") {
        read_char(); read_required($_) for qw(r u e);
        $counts{literals}++;
        return 1;
    } elsif ($cur eq "f") {
        read_char(); read_required($_) for qw(a l s e);
        $counts{literals}++;
        return 0;
    } elsif ($cur eq '"') {
        $counts{strings}++;
        return read_string();
    } elsif ($cur eq "[") {
        return read_array();
    } elsif ($cur eq "{") {
        return read_object();
    } elsif ($cur eq "-" || is_digit()) {
        return read_number();
    }
    die "expected a value at $pos\n";
}

sub read_array {
    $counts{arrays}++;
    read_char();
    my @array;
    skip_white_space();
    if ($cur eq "]") {
        read_char();
        return \@array;
    }
    while (1) {
        skip_white_space();
        push @array, read_value();
        skip_white_space();
        last if $cur ne ",";
        read_char();
    }
    read_required("]");
    return \@array;
}

sub read_object {
    $counts{objects}++;
    read_char();
    my %object;
    skip_white_space();
    if ($cur eq "}") {
        read_char();
        return \%object;
    }
    while (1) {
        skip_white_space();
        die "expected a name at $pos\n" if $cur ne '"';
        my $name = read_string();
        skip_white_space();
        read_required(":");
        skip_white_space();
        $object{$name} = read_value();
        skip_white_space();
        last if $cur ne ",";
        read_char();
    }
    read_required("}");
    return \%object;
}

sub read_string {
    read_char();
    my $start = $pos;
    my $buffer = "";
    while ($cur ne '"') {
        die "unterminated string\n" if $cur eq "";
        if ($cur eq "\\") {
            $buffer .= substr($src, $start, $pos - $start);
            read_char();
            my $e = $ESCAPES{$cur};
            die "expected a valid escape sequence at $pos\n" unless defined $e;
            $buffer .= $e;
            read_char();
            $start = $pos;
        } else {
            read_char();
        }
    }
    $buffer .= substr($src, $start, $pos - $start);
    read_char();
    return $buffer;
}

sub read_digits {
    die "expected a digit at $pos\n" unless is_digit();
    read_char() while is_digit();
}

sub read_number {
    $counts{numbers}++;
    my $start = $pos;
    read_char() if $cur eq "-";
    if ($cur eq "0") { read_char() } else { read_digits() }
    if ($cur eq ".") {
        read_char();
        read_digits();
    }
    if ($cur eq "e" || $cur eq "E") {
        read_char();
        read_char() if $cur eq "+" || $cur eq "-";
        read_digits();
    }
    return substr($src, $start, $pos - $start);
}

sub parse {
    ($src, $pos, $cur) = ($_[0], -1, "");
    %counts = (objects => 0, arrays => 0, strings => 0, numbers => 0, literals => 0);
    read_char();
    skip_white_space();
    my $result = read_value();
    skip_white_space();
    die "unexpected character at $pos\n" if $cur ne "";
    return $result;
}

my $rounds = $ARGV[0] // 40;
my $text = do { local $/; <STDIN> };
my $ops = 0;
$ops = scalar @{parse($text)->{operations}} for 1 .. $rounds;
print join(" ", $ops, @counts{qw(objects arrays strings numbers literals)}), "\n";
