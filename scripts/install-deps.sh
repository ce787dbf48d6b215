#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages gpumemtrace needs to build and test.
# Safe to run repeatedly: it installs only what is missing.
#   --quiet   print nothing when everything is present
set -euo pipefail
quiet=0
[ "${1:-}" = "--quiet" ] && quiet=1

packages=(
	build-essential   # cc, make
	libunwind-dev     # native call stacks
	uthash-dev        # hash tables
	libdw-dev         # symbolization (elfutils)
	libelf-dev
	libzstd1          # compressed trace chunks (dlopen'd at run time, never linked)
	libzstd-dev       # zstd.h only: t-zstd-decls checks our prototypes against it
	python3           # JSON checks in the integration tests
	python3-dev       # Python.h: t-python-frames builds a C extension (skipped without)
	binutils          # nm, for the export-list test
	zlib1g-dev        # gzip for 'gpumemtrace export --format pprof'
	librsvg2-bin      # rsvg-convert: the plot and flamegraph tests render SVG to PNG
	protobuf-compiler # protoc: the pprof export test decodes the profile
	pkg-config        # the install test checks gpumemtrace.pc
	groff-base        # the install test checks the man pages
	clang             # make fuzz (libFuzzer)
	libclang-rt-14-dev
	valgrind          # callgrind, for the instruction-count guard (t-perf-guard)
)
# `make bench` also wants heaptrack (its anchors; skipped if absent), bc
# and GNU time: apt-get install heaptrack bc time
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	[ $quiet -eq 1 ] || echo "install-deps: everything is installed"
	exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || echo "install-deps: apt-get update failed; trying the install anyway" >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
