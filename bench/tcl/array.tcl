proc main {} {
    set x 42
    set total 0
    for {set round 1} {$round <= 10} {incr round} {
        set xs {}
        for {set i 1} {$i <= 16000} {incr i} {
            set x [expr {($x * 16807) % 2147483647}]
            lappend xs $x
        }
        set ys [lsort -integer $xs]
        set total [expr {([lindex $ys 0] + [lindex $ys 8000] + [lindex $ys 15999] + $total) % 1000000007}]
    }
    puts $total
}

main
