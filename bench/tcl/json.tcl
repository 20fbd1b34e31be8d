# Tcl has no JSON in its standard distribution: a small encoder and a small
# recursive-descent decoder are part of the workload. Tcl values carry no type,
# so, as with tcllib's json::write, the encoder is told what each value is:
# json_string / json_array / json_object build JSON text from their parts.
# The decoder turns objects into dicts (key order kept) and arrays into lists,
# as tcllib's json::json2dict does.

proc json_string {s} {
    return "\"[string map {\" \\\" \\ \\\\ \n \\n \r \\r \t \\t \b \\b \f \\f} $s]\""
}

proc json_array {args} {
    return "\[[join $args ,]\]"
}

proc json_object {args} {
    set parts {}
    foreach {k v} $args {
        lappend parts "[json_string $k]:$v"
    }
    return "\{[join $parts ,]\}"
}

# Decoder: every proc takes the text and the name of the caller's position
# variable, and leaves the position just past what it read.
proc json_ws {s posVar} {
    upvar 1 $posVar i
    if {[string is space -strict [string index $s $i]] &&
            [regexp -start $i -indices {\A[ \t\r\n]*} $s m]} {
        set i [expr {[lindex $m 1] + 1}]
    }
}

proc json_value {s posVar} {
    upvar 1 $posVar i
    json_ws $s i
    switch -- [string index $s $i] {
        "\{" {
            set obj [dict create]
            incr i
            json_ws $s i
            if {[string index $s $i] eq "\}"} {
                incr i
                return $obj
            }
            while 1 {
                json_ws $s i
                if {[string index $s $i] ne "\""} {
                    error "expected a key at $i"
                }
                set k [json_str $s i]
                json_ws $s i
                if {[string index $s $i] ne ":"} {
                    error "expected ':' at $i"
                }
                incr i
                dict set obj $k [json_value $s i]
                json_ws $s i
                set c [string index $s $i]
                incr i
                if {$c eq "\}"} {
                    return $obj
                } elseif {$c ne ","} {
                    error "expected ',' or '\}' at $i"
                }
            }
        }
        "\[" {
            set arr {}
            incr i
            json_ws $s i
            if {[string index $s $i] eq "\]"} {
                incr i
                return $arr
            }
            while 1 {
                lappend arr [json_value $s i]
                json_ws $s i
                set c [string index $s $i]
                incr i
                if {$c eq "\]"} {
                    return $arr
                } elseif {$c ne ","} {
                    error "expected ',' or '\]' at $i"
                }
            }
        }
        "\"" {
            return [json_str $s i]
        }
        "t" {
            incr i 4
            return true
        }
        "f" {
            incr i 5
            return false
        }
        "n" {
            incr i 4
            return null
        }
        default {
            if {![regexp -start $i -indices {\A-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?} $s m]} {
                error "unexpected character at $i"
            }
            lassign $m a b
            set i [expr {$b + 1}]
            return [expr {[string range $s $a $b] + 0}]
        }
    }
}

proc json_str {s posVar} {
    upvar 1 $posVar i
    set start [expr {$i + 1}]
    set end [string first "\"" $s $start]
    if {$end < 0} {
        error "unterminated string at $i"
    }
    set raw [string range $s $start [expr {$end - 1}]]
    if {[string first "\\" $raw] < 0} {
        set i [expr {$end + 1}]
        return $raw
    }
    # Escapes present: walk the string, honouring escaped quotes.
    set out ""
    set j $start
    while 1 {
        set c [string index $s $j]
        if {$c eq "\""} {
            break
        } elseif {$c eq "\\"} {
            set e [string index $s [expr {$j + 1}]]
            switch -- $e {
                n { append out "\n" }
                t { append out "\t" }
                r { append out "\r" }
                b { append out "\b" }
                f { append out "\f" }
                u {
                    append out [format %c 0x[string range $s [expr {$j + 2}] [expr {$j + 5}]]]
                    incr j 4
                }
                default { append out $e }
            }
            incr j 2
        } elseif {$c eq ""} {
            error "unterminated string at $i"
        } else {
            append out $c
            incr j
        }
    }
    set i [expr {$j + 1}]
    return $out
}

proc json_parse {s} {
    set i 0
    set v [json_value $s i]
    json_ws $s i
    if {$i < [string length $s]} {
        error "trailing data at $i"
    }
    return $v
}

proc main {} {
    set total_len 0
    set total_ids 0
    for {set round 1} {$round <= 20} {incr round} {
        set recs {}
        for {set i 1} {$i <= 2000} {incr i} {
            lappend recs [json_object id $i name [json_string "name$i"] \
                tags [json_array [json_string a] [json_string b]]]
        }
        set text [json_array {*}$recs]
        incr total_len [string length $text]
        set back [json_parse $text]
        set s 0
        foreach r $back {
            incr s [dict get $r id]
        }
        incr total_ids $s
    }
    puts "$total_len $total_ids"
}

main
