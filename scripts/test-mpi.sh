#!/usr/bin/env bash
# ctest (CMakeLists.txt): `mpirun -n 2 ironlaw-mpi COMMAND` prints the same table and writes the
# same HDF5 file, byte for byte, as `ironlaw COMMAND` in one process, for COMMAND
# - sweep: an odd number of points, so the ranks hold unequal shares, and invalid points, so
#   status rows are gathered too (exit 10 + N for N failed points);
# - plan: five layouts simulated (unequal shares again) with ZeRO 1 and 2 both searched, so rows
#   that take their twin's step are gathered too (exit 0).
# usage: test-mpi.sh sweep|plan MPIRUN IRONLAW IRONLAW_MPI REPO
set -euo pipefail
command=$1 mpirun=$2 single=$3 multi=$4 repo=$5
case "$command" in
  sweep)
    args=(sweep "$repo/scenarios/gpt2-ddp-1node.yaml" --vary cluster.nodes=1,2,4 --vary parallel.tp=1,2,5
          --set run.steps=1 --no-progress -o out.h5) ;;
  plan)
    args=(plan "$repo/models/gpt2-124m.yaml" --batch-tokens "128 Ki" --seq 1024 --tokens "10 G" --gpus 8..16
          --space parallel.tp=1,2 --space parallel.pp=1,2 --space parallel.zero=1,2 --space parallel.cp=1
          --space parallel.microbatch_size=2 --space training.activation_checkpointing=none
          --space training.precision=bf16 --days 1 --price 2 --top 5 -o out.h5) ;;
  *) echo "usage: test-mpi.sh sweep|plan MPIRUN IRONLAW IRONLAW_MPI REPO" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/one" "$tmp/two"
# Open MPI refuses to start as root unless told; a container's CI often is root.
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
set +e
(cd "$tmp/one" && "$single" "${args[@]}" > out.txt 2> err.txt)
one=$?
(cd "$tmp/two" && "$mpirun" -n 2 --oversubscribe "$multi" "${args[@]}" > out.txt 2> err.txt)
two=$?
set -e
echo "exit status: ironlaw $one, mpirun -n 2 ironlaw-mpi $two"
cat "$tmp/one/err.txt" "$tmp/two/err.txt"
[ "$one" -eq "$two" ] || { echo "exit status differs"; exit 1; }
case "$command" in
  sweep) [ "$one" -ge 11 ] || { echo "expected the invalid points to be counted (exit 10 + N)"; exit 1; } ;;
  plan)
    [ "$one" -eq 0 ] || { echo "expected the plan to succeed"; exit 1; }
    grep -q "5 simulated" "$tmp/one/out.txt" || { echo "expected 5 simulated layouts"; cat "$tmp/one/out.txt"; exit 1; } ;;
esac
cmp "$tmp/one/out.txt" "$tmp/two/out.txt" || { diff "$tmp/one/out.txt" "$tmp/two/out.txt"; exit 1; }
cmp "$tmp/one/out.h5" "$tmp/two/out.h5"
echo "identical: $(wc -l < "$tmp/one/out.txt") lines of table, $(stat -c %s "$tmp/one/out.h5") bytes of HDF5"
