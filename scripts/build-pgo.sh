#!/usr/bin/env bash
# A release build of leash optimised with a profile of its own runs (profile-guided
# optimisation, as CPython's release builds are made): the binary a distribution would
# ship. The plain `cargo build --release` stays what the README, the tests and CI use.
#
#   scripts/build-pgo.sh            ->  target/pgo/leash (and target/pgo/leash-cgi)
#
# Three steps (about 10 minutes from nothing, 2 cores):
#   1. an instrumented release build (target/pgo/gen, -Cprofile-generate);
#   2. the training runs: every case file of tests/cases (all of the language, lightly)
#      and the core and text benchmarks of bench/ (fib, loop, strings, array, map, json,
#      wordfreq, logparse, csvsum, textops, jsonbig, startup). The classic benchmarks
#      (bounce ... jsonparse) are left out on purpose: they measure the PGO build on
#      programs it was not trained on (WORKLOG, twenty-sixth session);
#   3. the profile merged by the toolchain's own llvm-profdata (the llvm-tools
#      component, added with rustup when missing: its LLVM must be rustc's), and the
#      release build made again with -Cprofile-use (target/pgo/use).
# Measure it with `python3 bench/run.py --leash target/pgo/leash`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT="$ROOT/target/pgo"
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    echo "build-pgo: adding the llvm-tools component (llvm-profdata) ..." >&2
    rustup component add llvm-tools
fi

# The profile flags go in with `--config`, whose `build.rustflags` list cargo joins to
# .cargo/config.toml's (the functions' alignment); `RUSTFLAGS` would replace it.

rm -rf "$OUT/data"
mkdir -p "$OUT/data"
echo "build-pgo: 1/3 instrumented build ..." >&2
cargo build --release --target-dir "$OUT/gen" --config "build.rustflags=['-Cprofile-generate=$OUT/data']"
gen="$OUT/gen/release/leash"

echo "build-pgo: 2/3 training runs ..." >&2
python3 bench/gen_text.py target/bench/inputs > /dev/null
in=target/bench/inputs
big=(--max-steps 1000000000 --max-work 10000000000000 --max-memory 1000000000)
# Case files: their expectations are the test suite's business; a failing or refused
# one still trains the paths it took. Each under a time bound.
find tests/cases -name '*.lsh' | sort | while read -r f; do
    timeout 10 "$gen" --max-time 5 "$f" < /dev/null > /dev/null 2>&1 || true
done
for p in fib loop array json startup; do
    "$gen" "${big[@]}" "bench/leash/$p.lsh" < /dev/null > /dev/null
done
"$gen" "${big[@]}" bench/leash/strings.lsh 100000 > /dev/null
"$gen" "${big[@]}" bench/leash/map.lsh 300000 > /dev/null
"$gen" "${big[@]}" bench/leash/wordfreq.lsh < "$in/words.txt" > /dev/null
"$gen" "${big[@]}" bench/leash/logparse.lsh < "$in/access.log" > /dev/null
"$gen" "${big[@]}" bench/leash/textops.lsh < "$in/text.txt" > /dev/null
"$gen" "${big[@]}" bench/leash/jsonbig.lsh < "$in/big.json" > /dev/null
"$gen" "${big[@]}" --allow-files bench/leash/csvsum.lsh "$in/rows.csv" > /dev/null
"$gen" "${big[@]}" --allow-files bench/leash/csvline.lsh "$in/rows.csv" > /dev/null

echo "build-pgo: 3/3 optimised build ..." >&2
"$profdata" merge -o "$OUT/leash.profdata" "$OUT/data"
cargo build --release --target-dir "$OUT/use" --config "build.rustflags=['-Cprofile-use=$OUT/leash.profdata']"
cp "$OUT/use/release/leash" "$OUT/use/release/leash-cgi" "$OUT/"
echo "build-pgo: $OUT/leash" >&2
