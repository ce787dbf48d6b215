# The stack cache gives exactly what unw_backtrace gives, on stacks that
# vary in every way its key and verification depend on (stackmix.c):
# GPUMEMTRACE_STACK_CACHE=2 checks every capture against libunwind and
# notes the counts in the trace.
. "$TESTS_DIR/integration/lib.sh"
GPUMEMTRACE_STACK_CACHE=2 traced "$PROG_DIR/stackmix" >out.txt
grep -q "pairs=123" out.txt || fail "stackmix made $(cat out.txt), expected pairs=123"
"$GMT_CLI" dump "$(the_trace)" >dump.txt
note=$(grep -o 'stack cache verify: [^"]*' dump.txt) || fail "no stack cache note in the trace"
read -r hits misses bad < <(echo "$note" | sed 's/[^0-9]*\([0-9]*\) hits, \([0-9]*\) misses, \([0-9]*\) differ.*/\1 \2 \3/')
expect_eq "captures that differ from unw_backtrace ($note)" "$bad" 0
[ "$hits" -ge 30 ] || fail "only $hits cache hits: the cache is not used ($note)"
expect_eq "captures" "$((hits + misses))" 247 # 2 x 123 + the runtime's context retain
echo ok
