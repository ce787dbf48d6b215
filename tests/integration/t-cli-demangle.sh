# C++ function names read as people write them: on an H100, PyTorch's
# allocation site printed as _ZN3c104cuda20CUDACachingAllocator... The CLI
# demangles with libstdc++'s __cxa_demangle, loaded at run time; a name it
# rejects, and C names, stay as they are.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
python3 -c 'import ctypes; ctypes.CDLL("libstdc++.so.6")' 2>/dev/null || skip "libstdc++.so.6 not installed"
"$MKTRACE" d.gmt <<T
header start_mono=0 pid=40
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
stack parent=0 ip=0x401000 parent=1 ip=0x401100 parent=0 ip=0x402000 parent=0 ip=0x403000
symbol ip=0x401000 module=1 func=main file=main.c line=3
symbol ip=0x401100 module=1 func=_ZN5torch6detail5allocEmb file=alloc.cpp line=10
symbol ip=0x402000 module=1 func=_Znot_a_name file=x.cpp line=1
symbol ip=0x403000 module=1 func=_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator11alloc_blockEv file= line=0
events tid=1
ev api=cudaMalloc t=1000 ptr=0x10000000 size=3145728 dev=0 stack=2
ev api=cudaMalloc t=2000 ptr=0x20000000 size=2097152 dev=0 stack=3
ev api=cudaMalloc t=3000 ptr=0x30000000 size=1048576 dev=0 stack=4
trailer t=5000
T
"$GMT_CLI" top --by function --full-names d.gmt >top.txt || fail "top exit $?"
grep -q 'torch::detail::alloc(unsigned long, bool)' top.txt || fail "not demangled: $(cat top.txt)"
grep -q '_Znot_a_name' top.txt || fail "a name the demangler rejects was not kept: $(cat top.txt)"
grep -q 'c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block()' top.txt ||
	fail "PyTorch's allocator not demangled: $(cat top.txt)"
"$GMT_CLI" summary --json d.gmt >s.json || fail "summary exit $?"
expect_eq json-site "$(json s.json 'd["devices"][0]["peak_sites"][0]["function"]')" "torch::detail::alloc(unsigned long, bool)"
echo ok
