use strict;
use warnings;

print "hello\n";
