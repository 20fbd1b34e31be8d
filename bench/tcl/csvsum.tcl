# Tcl's standard distribution has no CSV package (tcllib's csv is separate): a small
# parser of one record per line (quoted fields with doubled quotes, commas inside quotes).
proc parse_line {s} {
    set fields {}
    set i 0
    set n [string length $s]
    while 1 {
        if {[string index $s $i] eq "\""} {
            set buf ""
            set j [expr {$i + 1}]
            while 1 {
                set q [string first "\"" $s $j]
                append buf [string range $s $j [expr {$q - 1}]]
                if {[string index $s [expr {$q + 1}]] eq "\""} {
                    append buf "\""
                    set j [expr {$q + 2}]
                } else {
                    set i [expr {$q + 1}]
                    break
                }
            }
            lappend fields $buf
        } else {
            set c [string first "," $s $i]
            if {$c < 0} { set c $n }
            lappend fields [string range $s $i [expr {$c - 1}]]
            set i $c
        }
        if {$i >= $n} break
        incr i
    }
    return $fields
}

proc main {path} {
    set f [open $path r]
    gets $f header
    set qty [dict create]
    set cents [dict create]
    set rows 0
    set noted 0
    while {[gets $f line] >= 0} {
        lassign [parse_line $line] id c name q price note
        dict incr qty $c $q
        dict incr cents $c [expr {int(floor($price * 100 + 0.5))}]
        incr rows
        if {$note ne ""} { incr noted }
    }
    close $f
    set out [list $rows $noted]
    foreach c [lsort [dict keys $qty]] {
        lappend out "$c:[dict get $qty $c]:[dict get $cents $c]"
    }
    puts [join $out " "]
}
main [lindex $argv 0]
