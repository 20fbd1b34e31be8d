proc main {n} {
    set x 42
    set m [dict create]
    for {set i 1} {$i <= $n} {incr i} {
        set x [expr {($x * 16807) % 2147483647}]
        dict incr m "w[expr {$x % 5000}]"
    }
    puts "[dict size $m] [dict get $m w42]"
}

main [expr {$argc > 0 ? [lindex $argv 0] : 300000}]
