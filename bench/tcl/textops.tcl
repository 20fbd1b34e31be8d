proc main {} {
    fconfigure stdin -translation lf
    set s [read stdin]
    set total 0
    for {set round 1} {$round <= 30} {incr round} {
        incr total [string length [string map {ka KA} $s]]
        incr total [string length [join [split $s "\n"] " | "]]
        incr total [string length [string toupper $s]]
        incr total [string first "zzz" $s]
        incr total [string first "ter ter ter" $s]
    }
    puts $total
}
main
