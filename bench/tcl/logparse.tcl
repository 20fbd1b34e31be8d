proc main {} {
    set pat {^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)}
    set n404 0
    set bytes200 0
    set lines 0
    set paths [dict create]
    while {[gets stdin line] >= 0} {
        regexp $pat $line -> ip t method path status bytes
        incr lines
        if {$status eq "404"} {
            incr n404
        } elseif {$status eq "200"} {
            incr bytes200 $bytes
        }
        dict incr paths $path
    }
    set ranked [lsort -stride 2 -index 1 -integer -decreasing \
                    [lsort -stride 2 -index 0 $paths]]
    set out [list $lines $n404 $bytes200]
    foreach {p n} [lrange $ranked 0 5] {
        lappend out "$p:$n"
    }
    puts [join $out " "]
}
main
