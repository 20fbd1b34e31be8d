proc main {n} {
    set s ""
    for {set i 1} {$i <= $n} {incr i} {
        append s "x$i"
    }
    puts [string length $s]
}

main [expr {$argc > 0 ? [lindex $argv 0] : 100000}]
