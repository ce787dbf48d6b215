#!/usr/bin/env bash
# gpumemtrace check --ignore-library GLOB: allocations charged to a library
# whose file name matches (the first module outside the CUDA libraries in
# the stack) are left out of every figure, in the baseline too; --junit
# writes JUnit XML that parses, one testcase per check.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# stacks, innermost first: 2 = libcudart <- app (train), 4 = libcudart <-
# libcublasLt (a workspace) <- app. Device 0: the app holds 3000 at the end
# (peak 3000), the cuBLAS workspace 4 MiB from t=20 to t=40.
"$MKTRACE" ws.gmt <<'T'
header start_mono=0 features=1
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
module id=2 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libcudart.so.12.4
module id=3 bias=0x7f4000000000 start=0x7f4000000000 end=0x7f4000100000 path=/usr/lib/libcublasLt.so.12
stack parent=0 ip=0x401100 parent=1 ip=0x7f0000001000 parent=1 ip=0x7f4000001000 parent=3 ip=0x7f0000001000
symbol ip=0x401100 module=1 func=train file=train.c line=42
symbol ip=0x7f4000001000 module=3 func=cublasLtMatmul
symbol ip=0x7f0000001000 module=2 func=cudaMalloc
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=1000 dev=0 stack=2
ev api=cudaMalloc t=20 ptr=0x10000000 size=4194304 stack=4
ev api=cudaMalloc t=30 ptr=0x2000 size=2000 stack=2
ev api=cudaFree t=40 ptr=0x10000000
trailer t=100
T
# the same workload with a bigger workspace and 10% more app memory
"$MKTRACE" ws2.gmt <<'T'
header start_mono=0 features=1
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
module id=2 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libcudart.so.12.4
module id=3 bias=0x7f4000000000 start=0x7f4000000000 end=0x7f4000100000 path=/usr/lib/libcublasLt.so.12
stack parent=0 ip=0x401100 parent=1 ip=0x7f0000001000 parent=1 ip=0x7f4000001000 parent=3 ip=0x7f0000001000
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=1000 dev=0 stack=2
ev api=cudaMalloc t=20 ptr=0x10000000 size=8388608 stack=4
ev api=cudaMalloc t=30 ptr=0x2000 size=2300 stack=2
ev api=cudaFree t=40 ptr=0x10000000
trailer t=100
T

st() {
	local want=$1
	shift
	set +e
	"$GMT_CLI" check "$@" >out 2>err
	local rc=$?
	set -e
	[ $rc -eq "$want" ] || fail "check $*: exit $rc, expected $want: $(cat out err)"
}

# the workspace makes the peak 4 MiB + 3000
st 1 --max-peak 3000 ws.gmt
grep -q 'peak 4.00 MiB (4197304 B) > limit' out || fail "unfiltered: $(cat out)"
st 0 --max-peak 4197304 ws.gmt
# left out: the peak is the app's 3000
st 0 --max-peak 3000 --ignore-library 'libcublasLt.so*' ws.gmt
grep -q '^PASS  max-peak .*peak 2.93 KiB (3000 B) <= limit 2.93 KiB (3000 B)' out || fail "filtered: $(cat out)"
st 1 --max-peak 2999 --ignore-library 'libcublasLt.so*' ws.gmt
st 0 --max-peak 3000 --ignore-library 'libnccl*' --ignore-library 'libcublas*' ws.gmt
# the glob is on the file name: libcublas.so* does not match libcublasLt.so.12
st 1 --max-peak 3000 --ignore-library 'libcublas.so*' ws.gmt
st 1 --max-peak 3000 --ignore-library 'cublasLt' ws.gmt
st 0 --json --max-peak 3000 --ignore-library 'libcublasLt.so*' ws.gmt
expect_eq json-ignored "$(json out '[d["ignore_libraries"], d["traces"][0]["ignored_allocations"], d["traces"][0]["ignored_bytes"], d["checks"][0]["measured_bytes"]]')" \
	"[['libcublasLt.so*'], 1, 4194304, 3000]"
# ignoring the app's own file leaves only the workspace
st 0 --max-peak 4MiB --max-live-at-end 0 --ignore-library app ws.gmt

# the baseline is filtered alike: app 3000 -> 3300 is +10%; with the
# workspaces (4 MiB -> 8 MiB) it would be about +100%
st 1 --baseline ws.gmt --max-increase 15 ws2.gmt
st 0 --baseline ws.gmt --max-increase 10 --ignore-library 'libcublasLt*' ws2.gmt
st 1 --baseline ws.gmt --max-increase 9 --ignore-library 'libcublasLt*' ws2.gmt

# --junit: one testcase per check, failures with the figures (ws2 also
# fails live-at-end: 3300); names that
# need escaping stay valid XML
cp ws.gmt 'r&<"0">.gmt'
st 1 --junit ci.xml --max-peak 3000 --max-live-at-end 3000 ws.gmt 'r&<"0">.gmt' ws2.gmt
python3 - ci.xml <<'P' || fail "junit: $(cat ci.xml)"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
cases = root.findall("./testsuite/testcase")
fails = [c for c in cases if c.find("failure") is not None]
assert len(cases) == 6, len(cases)
assert len(fails) == 4, [c.get("name") for c in fails]
suite = root.find("testsuite")
assert suite.get("tests") == "6" and suite.get("failures") == "4", suite.attrib
assert [c.get("classname") for c in fails] == ["ws.gmt", 'r&<"0">.gmt', "ws2.gmt", "ws2.gmt"], [c.get("classname") for c in fails]
assert [c.get("name") for c in fails] == ["max-peak device 0"] * 3 + ["max-live-at-end device 0"]
msg = fails[0].find("failure").get("message")
assert "(4197304 B)" in msg and "limit 2.93 KiB (3000 B)" in msg, msg
assert fails[2].find("failure").text and "8.00 MiB" in fails[2].find("failure").text
P
st 0 --junit ci.xml --max-peak 1GiB ws.gmt
python3 -c 'import sys, xml.etree.ElementTree as ET; r = ET.parse("ci.xml").getroot(); assert len(r.findall(".//testcase")) == 1 and not r.findall(".//failure")' ||
	fail "passing junit: $(cat ci.xml)"
st 2 --junit /nonexistent/dir/ci.xml --max-peak 1GiB ws.gmt
grep -q 'cannot write /nonexistent/dir/ci.xml' err || fail "junit error: $(cat err)"
echo ok
