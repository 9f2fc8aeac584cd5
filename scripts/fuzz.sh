#!/usr/bin/env bash
# Runs each libFuzzer target of fuzz/ for SECONDS (wall clock), one after the other, seeded from
# the shipped scenarios, the corpus inputs (tests/corpus/inputs) and HDF5 files written by the
# Release binary (when RELEASE_BUILD/ironlaw exists). Fails on any crash, leak, sanitizer report,
# timeout (10 s per input) or out-of-memory (2 GiB). Prints each target's executions, executions
# per second, coverage (libFuzzer's "cov:" edges and "ft:" features) and CPU seconds.
# usage: scripts/fuzz.sh FUZZ_BUILD SECONDS [RELEASE_BUILD]
# FUZZ_TARGETS="scenario h5_reader" (the default) selects the targets.
set -euo pipefail
build=${1:?fuzz build folder}
seconds=${2:-60}
release=${3:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
work="$build/fuzz-work"
rm -rf "$work"
mkdir -p "$work/scenario-seeds" "$work/scenario-corpus" "$work/h5-seeds" "$work/h5-corpus" "$work/artifacts"
find "$root/scenarios" -name '*.yaml' -exec cp {} "$work/scenario-seeds/" \;
cp "$root"/tests/corpus/inputs/*.yaml "$work/scenario-seeds/"
if [ -x "$release/ironlaw" ]; then
  "$release/ironlaw" run "$root/scenarios/gpt2-ddp-1node.yaml" --set run.steps=1 --trace op \
    -o "$work/h5-seeds/run-op.h5" -q
  "$release/ironlaw" run "$root/scenarios/gpt2-ddp-1node.yaml" --set run.steps=2 --trace step \
    -o "$work/h5-seeds/run-step.h5" -q
  "$release/ironlaw" sweep "$root/scenarios/gpt2-ddp-1node.yaml" --vary seed=1,2 \
    -o "$work/h5-seeds/sweep.h5" > /dev/null
fi
printf 'not an HDF5 file\n' > "$work/h5-seeds/garbage"
cp "$root"/tests/corpus/inputs/*.h5 "$work/h5-seeds/"

status=0
for target in ${FUZZ_TARGETS:-scenario h5_reader}; do
  seeds="$work/scenario-seeds" corpus="$work/scenario-corpus"
  if [ "$target" = h5_reader ]; then seeds="$work/h5-seeds" corpus="$work/h5-corpus"; fi
  log="$work/$target.log"
  # libhdf5 mallocs what a damaged file's headers claim (terabytes); glibc returns NULL there and
  # HDF5 reports an error (the Release binary exits 2), while ASan aborts unless told to behave
  # like glibc. Our own allocations are bounded before they happen (resource estimate).
  may_return_null=0
  if [ "$target" = h5_reader ]; then may_return_null=1; fi
  echo "fuzz: $target for ${seconds} s"
  TIMEFORMAT="%U %S"
  if ! { time ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=$may_return_null:suppressions=$root/fuzz/asan-hdf5.supp" LSAN_OPTIONS="suppressions=$root/fuzz/lsan-hdf5.supp" \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/$target-" "$corpus" "$seeds" > "$log" 2>&1; } 2> "$work/$target.cpu"; then
    echo "fuzz: $target FAILED; the input is in $work/artifacts/, the log in $log"
    tail -40 "$log"
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 || true)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$work/$target.cpu" 2>/dev/null || echo "?")
  echo "fuzz: $target: $runs executions, $rate, $cov (edges and features of the instrumented code), $cpu CPU s (probe children included)"
  # A contained death of the HDF5 probe's child (libhdf5 crashing, a bound) leaves no artifact:
  # the child resets the handlers it inherits from libFuzzer (output::reset_inherited_death_handlers).
  # Any file here is a finding of the fuzzed process itself.
  artifacts=$(find "$work/artifacts" -name "$target-*" -type f | wc -l)
  echo "fuzz: $target: $artifacts artifact file(s) in $work/artifacts"
done
exit $status
