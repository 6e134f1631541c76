#!/bin/sh
# probe_compare.sh PROBE SIMGPU_LIBDIR NVIDIA_LIBDIR
# Runs descriptor_probe on simgpu's libcublasLt.so.13 and on NVIDIA's and fails unless both transcripts are equal
# (the first line, naming the library that was loaded, must differ and is not compared).
set -eu
probe=$1 ours=$2 real=$3
tmp=${TMPDIR:-/tmp}/lt_probe.$$
trap 'rm -f "$tmp.ours" "$tmp.real"' EXIT
LD_LIBRARY_PATH="$ours" "$probe" > "$tmp.ours"
LD_LIBRARY_PATH="$real" "$probe" > "$tmp.real"
head -n 1 "$tmp.ours" | grep -q "^library: $ours/" || { echo "FAIL: not simgpu's: $(head -n 1 "$tmp.ours")"; exit 1; }
head -n 1 "$tmp.real" | grep -q "^library: $real/" || { echo "FAIL: not NVIDIA's: $(head -n 1 "$tmp.real")"; exit 1; }
if ! diff -u "$tmp.real" "$tmp.ours" | tail -n +4 | grep '^[-+]' | grep -v '^[-+]library: ' > "$tmp.ours.diff"; then
  echo "OK: $(($(wc -l < "$tmp.real") - 1)) transcript lines identical"
  rm -f "$tmp.ours.diff"
  exit 0
fi
echo "FAIL: simgpu (+) differs from NVIDIA (-):"
cat "$tmp.ours.diff"
rm -f "$tmp.ours.diff"
exit 1
