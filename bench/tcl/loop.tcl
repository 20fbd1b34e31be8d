proc main {} {
    set s 0
    set i 1
    while {$i <= 3000000} {
        incr s [expr {($i * $i) % 7}]
        incr i
    }
    puts $s
}

main
