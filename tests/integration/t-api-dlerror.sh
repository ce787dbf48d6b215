# dlsym(RTLD_DEFAULT, "cuNoSuchCall") misses: dlerror() must say what it
# says untraced (the program's name), not name libgpumemtrace.so, as it
# did when the lookup was made from our dlsym. A miss is now looked up
# again as the caller (a tail call). Traced output diffed with untraced.
. "$TESTS_DIR/integration/lib.sh"
untraced "$PROG_DIR/harsh" dlerror >u.txt
traced "$PROG_DIR/harsh" dlerror >t.txt
grep -q "harsh: undefined symbol: cuNoSuchCall" u.txt || fail "untraced: $(cat u.txt)"
diff u.txt t.txt || fail "traced dlerror() differs from untraced"
echo ok
