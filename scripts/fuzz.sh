#!/usr/bin/env bash
# The fuzz targets of fuzz/ (cargo-fuzz, libFuzzer). See fuzz/README.md.
#   scripts/fuzz.sh build                 build every target (one cargo invocation)
#   scripts/fuzz.sh smoke [SECONDS]       each target for SECONDS (default 20) from the
#                                         repository's corpus (left unchanged); CI runs it
#   scripts/fuzz.sh run TARGET SECONDS    a campaign run of one target (built first);
#                                         new inputs go to fuzz/work/TARGET (not in
#                                         git), crashes to fuzz/artifacts/TARGET
# Needs cargo-fuzz (`smoke` installs it from the registry when it is missing:
# `cargo install cargo-fuzz --locked`) and nightly features: the nightly toolchain when
# rustup has one, else this toolchain with RUSTC_BOOTSTRAP=1. Without cargo-fuzz or a
# C++ compiler (libFuzzer), `smoke` says so and succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS="load eval json json_stream csv url date re gateway cgi fmt layout fastcgi db pg_url"
BIN=fuzz/target/x86_64-unknown-linux-gnu/release
# libFuzzer's own limits: one process, 10 s per input, 1 GiB resident. The smoke run
# also closes the target's stderr (-close_fd_mask=2, quiet CI logs); a campaign run keeps
# it, so that a panic's message reaches the log (with stderr closed, a panic is only
# "deadly signal": one such crash in `re` on 2026-12-02 could not be explained for that).
FLAGS="-timeout=10 -rss_limit_mb=1024"

# cargo-fuzz passes flags only nightly accepts: the nightly toolchain when there is one,
# else the machine's toolchain told to accept them.
if cargo +nightly --version >/dev/null 2>&1; then
  CARGO=(cargo +nightly)
else
  CARGO=(env RUSTC_BOOTSTRAP=1 cargo)
fi

have_fuzz() {
  command -v cargo-fuzz >/dev/null 2>&1 || cargo fuzz --version >/dev/null 2>&1
}

have_tools() {
  have_fuzz || return 1
  # libfuzzer-sys compiles libFuzzer (C++).
  command -v c++ >/dev/null 2>&1 || command -v clang++ >/dev/null 2>&1 || return 1
}

# The test command installs what it needs: cargo-fuzz from the registry (about three
# minutes on two cores), once.
install_tools() {
  if ! have_fuzz; then
    echo "   installing cargo-fuzz (cargo install cargo-fuzz --locked) ..."
    cargo install cargo-fuzz --locked --quiet >/dev/null 2>&1 || echo "   (could not install cargo-fuzz)"
  fi
}

build() {
  # No sanitizer: the code under test is safe Rust (forbid(unsafe_code)); the one crate
  # with unsafe code (the counting allocator) forwards to malloc. Debug assertions and
  # overflow checks are on (cargo-fuzz's default).
  "${CARGO[@]}" fuzz build -s none --codegen-units 16 "$@"
}

# Run one target's binary in an empty working directory (so that `include` in a fuzzed
# program finds nothing of the repository), stdin from /dev/null.
run_bin() {
  local t=$1; shift
  local extra=""
  # The generator needs bytes to write a program of some size: long inputs from the start.
  [ "$t" = eval ] && extra="-len_control=0"
  # Leash's keywords, operators and builtin names for the loader.
  [ "$t" = load ] && extra="-dict=$PWD/fuzz/dict/load.dict"
  [ "$t" = layout ] && extra="-dict=$PWD/fuzz/dict/load.dict"
  # SQL keywords, functions, pragmas and operators.
  [ "$t" = db ] && extra="-dict=$PWD/fuzz/dict/sql.dict"
  local wd
  wd=$(mktemp -d)
  (cd "$wd" && "$OLDPWD/$BIN/$t" $FLAGS $extra "$@" </dev/null)
  local rc=$?
  rm -rf "$wd"
  return $rc
}

case "${1:-}" in
  build)
    shift
    build "$@"
    ;;
  smoke)
    secs=${2:-20}
    install_tools
    if ! have_tools; then
      echo "   (fuzz smoke runs skipped: cargo-fuzz or a C++ compiler is missing;"
      echo "    install with: cargo install cargo-fuzz, and a C++ compiler)"
      exit 0
    fi
    t0=$(date +%s)
    build
    echo "   fuzz targets built in $(( $(date +%s) - t0 )) s"
    for t in $TARGETS; do
      tmp=$(mktemp -d)
      [ -d "fuzz/corpus/$t" ] && cp -r "fuzz/corpus/$t/." "$tmp/"
      mkdir -p "fuzz/artifacts/$t"
      if ! run_bin "$t" -close_fd_mask=2 -max_total_time="$secs" \
          -artifact_prefix="$PWD/fuzz/artifacts/$t/" "$tmp" >"$tmp.log" 2>&1; then
        tail -40 "$tmp.log"
        echo "fuzz target $t failed (input saved under fuzz/artifacts/$t/)"
        rm -rf "$tmp" "$tmp.log"
        exit 1
      fi
      echo "   fuzz $t: $(grep -o '#[0-9]*.*DONE.*\|Done [0-9]* runs.*' "$tmp.log" | tail -1)"
      rm -rf "$tmp" "$tmp.log"
    done
    ;;
  run)
    t=${2:?target}; secs=${3:?seconds}
    # Built first: a campaign on a binary left from earlier sources tests old code.
    build "$t"
    mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t"
    dirs=("$PWD/fuzz/work/$t")
    [ -d "fuzz/corpus/$t" ] && dirs+=("$PWD/fuzz/corpus/$t")
    run_bin "$t" -max_total_time="$secs" -print_final_stats=1 \
      -artifact_prefix="$PWD/fuzz/artifacts/$t/" "${dirs[@]}"
    ;;
  *)
    sed -n 2,10p "$0"
    exit 2
    ;;
esac
