proc main {} {
    set counts [dict create]
    set total 0
    while {[gets stdin line] >= 0} {
        foreach w [split [string tolower $line] " "] {
            dict incr counts $w
            incr total
        }
    }
    set ranked [lsort -stride 2 -index 1 -integer -decreasing \
                    [lsort -stride 2 -index 0 $counts]]
    set out [list $total [dict size $counts]]
    foreach {w n} [lrange $ranked 0 9] {
        lappend out "$w:$n"
    }
    puts [join $out " "]
}
main
