#!/bin/sh
# check_exports.sh SIMGPU_LIB NVIDIA_LIB VERSION_NODE
# Fails unless every symbol simgpu's library defines is exported under VERSION_NODE as the default version
# (name@@node) and NVIDIA's library exports the same name under the same node, so a binary linked against
# NVIDIA's library finds every simgpu definition it needs by the version it recorded.
set -eu
ours=$1 real=$2 node=$3
nm -D --defined-only "$ours" | awk '{print $3}' | grep -v "^${node}\$" | sort > "${TMPDIR:-/tmp}/ours.$$"
nm -D --defined-only "$real" | awk '{print $3}' | sort > "${TMPDIR:-/tmp}/real.$$"
trap 'rm -f "${TMPDIR:-/tmp}/ours.$$" "${TMPDIR:-/tmp}/real.$$"' EXIT
count=$(wc -l < "${TMPDIR:-/tmp}/ours.$$")
if [ "$count" -eq 0 ]; then
  echo "FAIL: $ours exports nothing"
  exit 1
fi
bad=$(grep -v "@@${node}\$" "${TMPDIR:-/tmp}/ours.$$" || true)
if [ -n "$bad" ]; then
  echo "FAIL: exported without the default version node ${node}:"
  echo "$bad"
  exit 1
fi
missing=$(comm -23 "${TMPDIR:-/tmp}/ours.$$" "${TMPDIR:-/tmp}/real.$$")
if [ -n "$missing" ]; then
  echo "FAIL: exported by $ours but not by $real:"
  echo "$missing"
  exit 1
fi
echo "OK: $count symbols of $ours match $real under ${node}"
