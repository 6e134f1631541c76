#!/bin/sh
# exports_equal_test.sh SIMGPU_LIB NVIDIA_LIB VERSION_NODE
# Fails unless simgpu's library exports exactly the names NVIDIA's does, each under the same version node, so a
# program linked against NVIDIA's library resolves every symbol on simgpu, also when it binds all of them at load
# (LD_BIND_NOW=1, -z now). Exits 77 (skipped) when NVIDIA's library is absent.
set -eu
ours=$1 real=$2 node=$3
if [ ! -e "$real" ]; then
  echo "SKIP: $real is absent"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/cudnn-exports.XXXXXX")
trap 'rm -rf "$dir"' EXIT
nm -D --defined-only "$ours" | awk '{print $3}' | grep -v "^${node}\$" | sort > "$dir/ours"
nm -D --defined-only "$real" | awk '{print $3}' | grep -v "^${node}\$" | sort > "$dir/real"
if [ ! -s "$dir/real" ]; then
  echo "FAIL: $real exports nothing"
  exit 1
fi
if ! diff "$dir/real" "$dir/ours" > "$dir/diff"; then
  echo "FAIL: export sets differ (< only NVIDIA's, > only simgpu's):"
  grep '^[<>]' "$dir/diff"
  exit 1
fi
echo "OK: $(wc -l < "$dir/ours") exports identical to $real's"
