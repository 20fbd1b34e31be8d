#!/bin/sh
# Issue 25 measurements (bench/README.md, WORKLOG 2026-12-03). Data files are made under
# /tmp by gen.py (never committed). LEASH defaults to the release build.
# Prints: case, tool, exit status, wall s, user s, peak RSS KiB (/usr/bin/time -f).
LEASH=${LEASH:-../../target/release/leash}
L="$LEASH --limit all=max --max-steps 100000000000 --max-work 10000000000000 --allow-read"
t() { name=$1; tool=$2; shift 2
  /usr/bin/time -f "%x %e %U %M" -o /tmp/i25_time "$@" > /tmp/i25_out 2>/tmp/i25_err
  printf '%-12s %-22s %s\n' "$name" "$tool" "$(cat /tmp/i25_time | tail -1)"; }
t log      "leash"        $L --max-memory 4G logreport.lsh /tmp/i25_access.log
t log      "perl"         perl logreport.pl /tmp/i25_access.log
t log      "python3"      python3 logreport.py /tmp/i25_access.log
t log      "leash 32M"    $L --max-memory 32M logreport.lsh /tmp/i25_access.log
t json     "leash"        $L --max-memory 4G jsonround.lsh /tmp/i25_doc.json
t json     "python3"      python3 jsonround.py /tmp/i25_doc.json
t json     "leash 128M"   $L --max-memory 128M jsonround.lsh /tmp/i25_doc.json
t sort     "leash"        $L --max-memory 4G sort.lsh
t sort     "python3"      python3 sort.py
t sort     "leash 64M"    $L --max-memory 64M sort.lsh
t map      "leash"        $L --max-memory 4G map.lsh
t map      "python3"      python3 map.py
t map      "leash 64M"    $L --max-memory 64M map.lsh
t csv      "leash"        $L --max-memory 4G csvparse.lsh /tmp/i25_data.csv
t csv      "python3"      python3 csvparse.py /tmp/i25_data.csv
t csv      "leash 128M"   $L --max-memory 128M csvparse.lsh /tmp/i25_data.csv
