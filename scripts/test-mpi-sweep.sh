#!/usr/bin/env bash
# ctest (CMakeLists.txt): `mpirun -n 2 ironlaw-mpi sweep` prints the same table and writes the
# same HDF5 file, byte for byte, as `ironlaw sweep` in one process. The sweep has an odd number
# of points, so the ranks hold unequal shares, and an invalid point, so a status row is gathered too.
# usage: test-mpi-sweep.sh MPIRUN IRONLAW IRONLAW_MPI REPO
set -euo pipefail
mpirun=$1 single=$2 multi=$3 repo=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/one" "$tmp/two"
args=(sweep "$repo/scenarios/gpt2-ddp-1node.yaml" --vary cluster.nodes=1,2,4 --vary parallel.tp=1,2,5
      --set run.steps=1 --no-progress -o sweep.h5)
# Open MPI refuses to start as root unless told; a container's CI often is root.
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
set +e
(cd "$tmp/one" && "$single" "${args[@]}" > out.txt 2> err.txt)
one=$?
(cd "$tmp/two" && "$mpirun" -n 2 --oversubscribe "$multi" "${args[@]}" > out.txt 2> err.txt)
two=$?
set -e
echo "exit status: ironlaw $one, mpirun -n 2 ironlaw-mpi $two"
cat "$tmp/two/err.txt"
[ "$one" -eq "$two" ] || { echo "exit status differs"; exit 1; }
[ "$one" -ge 11 ] || { echo "expected the invalid points to be counted (exit 10 + N)"; exit 1; }
cmp "$tmp/one/out.txt" "$tmp/two/out.txt" || { diff "$tmp/one/out.txt" "$tmp/two/out.txt"; exit 1; }
cmp "$tmp/one/sweep.h5" "$tmp/two/sweep.h5"
echo "identical: $(wc -l < "$tmp/one/out.txt") lines of table, $(stat -c %s "$tmp/one/sweep.h5") bytes of HDF5"
