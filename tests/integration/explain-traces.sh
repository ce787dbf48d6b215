# The built traces of t-cli-explain and docs/questions.md, each shaped like
# a framework's allocator at the driver level (../shared/notes/frameworks.md),
# written into the current directory with mktrace:
#   tf.gmt     TF with allow_growth: regions of 2 MiB doubling to 64 MiB
#   retry.gmt  PyTorch: a cudaMalloc fails, a cached segment is freed, the
#              retry of the same size succeeds
#   other.gmt  an OOM while another process held most of a 1 GiB device
#   a.gmt, b.gmt  two runs: B on a bigger GPU, another driver, expandable
#              segments, three times the memory
# Usage: MKTRACE=... . explain-traces.sh; explain_traces
MiB=1048576
GiB=$((1024 * MiB))

explain_run() { # out total driver env name bytes
	{
		cat <<T
process pid=10 ppid=1 exe=/usr/bin/python3 arg=python3 $4
module id=1 bias=0 start=0x400000 end=0x500000 path=/opt/torch/lib/libc10_cuda.so
device ord=0 name="$5" total=$2 driver=$3
stack parent=0 ip=0x401000
events tid=1
ev api=cudaMalloc t=1000 ptr=0x10000000 size=$6 dev=0 stack=1
trailer t=9000
T
	} | "$MKTRACE" "$1"
}
explain_traces() {
	{
		cat <<-T
	process pid=7 ppid=1 exe=/usr/bin/python3 arg=python3 env=TF_FORCE_GPU_ALLOW_GROWTH=true
	module id=1 bias=0 start=0x400000 end=0x500000 path=/usr/lib/libtensorflow_framework.so.2
	device ord=0 name="Sim GPU" total=$((80 * GiB)) driver=12080
	stack parent=0 ip=0x401000
	events tid=1
	T
		for i in 0 1 2 3 4 5; do
			echo "ev api=cuMemAlloc_v2 t=$((1000 * (i + 1))) ptr=$((0x10000000 * (i + 1))) size=$(((2 * MiB) << i)) dev=0 stack=1"
		done
		echo "trailer t=9000"
	} | "$MKTRACE" tf.gmt
	{
		cat <<-T
	process pid=8 ppid=1 exe=/usr/bin/python3 arg=python3
	module id=1 bias=0 start=0x400000 end=0x500000 path=/opt/torch/lib/libc10_cuda.so
	device ord=0 name="Sim GPU" total=$GiB driver=12080
	stack parent=0 ip=0x401000
	events tid=1
	ev api=cudaMalloc t=1000 ptr=0x10000000 size=$((20 * MiB)) dev=0 stack=1
	ev api=cudaMalloc t=2000 ptr=0x20000000 size=$((20 * MiB)) dev=0 stack=1
	ev api=cudaMalloc t=3000 ptr=0x30000000 size=$((2 * MiB)) dev=0 stack=1
	ev api=cudaMalloc t=4000 ptr=0 size=$((20 * MiB)) dev=0 stack=1 result=2
	ev api=cudaFree t=5000 ptr=0x20000000 dev=0
	ev api=cudaMalloc t=6000 ptr=0x40000000 size=$((20 * MiB)) dev=0 stack=1
	trailer t=9000
	T
	} | "$MKTRACE" retry.gmt
	{
		cat <<-T
	process pid=9 ppid=1 exe=/work/app arg=app
	module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
	device ord=0 name="Sim GPU" total=$GiB driver=12080
	stack parent=0 ip=0x401000
	events tid=1
	ev api=cudaMalloc t=1000 ptr=0x10000000 size=$((100 * MiB)) dev=0 stack=1
	ev api=cudaMalloc t=2000 ptr=0 size=$((500 * MiB)) dev=0 stack=1 result=2
	meminfo tid=1 t=2000 dev=0 free=$((200 * MiB)) total=$GiB api=cudaMalloc
	trailer t=9000
	T
	} | "$MKTRACE" other.gmt
	explain_run a.gmt $((80 * GiB)) 12080 "" "H100" $((100 * MiB))
	explain_run b.gmt $((140 * GiB)) 13000 "env=PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" "H200" $((300 * MiB))
}
