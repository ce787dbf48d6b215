# Hand-built traces for the t-report-* tests (sourced after lib.sh).
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# report_trace OUT [PROCESS-LINE]: the three-library trace.
# stacks (innermost first):
#   3: libcudart <- train (train.c:10) <- main          library app
#   5: libcudart <- libnccl.so.2+0x100 <- main          library libnccl.so.2
#   7: libcuda <- cublasLtMatmul <- train <- main        library libcublasLt.so.12
#  10: libcudart <- train <- eval                        library app
report_trace() {
	{
		echo "header start_mono=0 pid=11"
		[ -z "${2:-}" ] || echo "$2"
		cat <<'T'
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
module id=2 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libcudart.so.12
module id=3 bias=0x7f2000000000 start=0x7f2000000000 end=0x7f2000100000 path=/usr/lib/libcuda.so.1
module id=4 bias=0x7f4000000000 start=0x7f4000000000 end=0x7f4000100000 path=/usr/lib/libnccl.so.2
module id=5 bias=0x7f5000000000 start=0x7f5000000000 end=0x7f5000100000 path=/usr/lib/libcublasLt.so.12
stack parent=0 ip=0x401000 parent=1 ip=0x401100 parent=2 ip=0x7f0000001000
stack parent=1 ip=0x7f4000000100 parent=4 ip=0x7f0000001000
stack parent=2 ip=0x7f5000000200 parent=6 ip=0x7f2000000500
stack parent=0 ip=0x401300 parent=8 ip=0x401100 parent=9 ip=0x7f0000001000
symbol ip=0x401000 module=1 func=main file=main.c line=3
symbol ip=0x401100 module=1 func=train file=train.c line=10
symbol ip=0x401300 module=1 func=eval file=eval.c line=5
symbol ip=0x7f5000000200 module=5 func=cublasLtMatmul
events tid=1
ev api=cudaMalloc    t=10 ptr=0x1000 size=1000 dev=0 stack=3
ev api=cudaMalloc    t=20 ptr=0x2000 size=4000 stack=5
ev api=cuMemAlloc_v2 t=30 ptr=0x3000 size=500 stack=7
ev api=cudaMalloc    t=40 ptr=0x4000 size=2000 stack=3
ev api=cudaMalloc    t=45 ptr=0x6000 size=100 stack=10
ev api=cudaFree      t=50 ptr=0x4000
ev api=cudaFree      t=60 ptr=0x2000
ev api=cuMemAlloc_v2 t=70 ptr=0x5000 size=3000 stack=7
ev api=cudaMalloc    t=80 size=99999999 result=2 stack=3
ev api=cudaMallocHost t=90 ptr=0x7000 size=64 dev=-1 stack=3
trailer t=100
T
	} | "$MKTRACE" "$1"
}

# report_small OUT [PROCESS-LINE]: one 2000-byte allocation at train (stack 3)
# live at the end, on device 0.
report_small() {
	{
		echo "header start_mono=0 pid=22"
		[ -z "${2:-}" ] || echo "$2"
		cat <<'T'
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
module id=2 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libcudart.so.12
stack parent=0 ip=0x401000 parent=1 ip=0x401100 parent=2 ip=0x7f0000001000
symbol ip=0x401000 module=1 func=main file=main.c line=3
symbol ip=0x401100 module=1 func=train file=train.c line=10
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=2000 dev=0 stack=3
trailer t=50
T
	} | "$MKTRACE" "$1"
}
