#!/usr/bin/env bash
# Private by default (issue 29.6). A trace is created 0600 whatever the
# umask; the values of recorded variables whose names suggest a secret
# (PASSWORD, PASSWD, TOKEN, SECRET, KEY, CREDENTIAL, any case) and argv
# words that carry one (--*key*=..., --token VALUE, API_SECRET=...) are
# written as <redacted>; GPUMEMTRACE_RECORD_ARGV=0 keeps no argv at all
# (reports name the program by its path). Before: 0644, and the argv's
# --api-key=... and a password-named NCCL_ variable read back with `dump`
# and `strings`.
. "$TESTS_DIR/integration/lib.sh"
P=$PROG_DIR/fdclash
secret=s3cr3t-$$-value
args=(stdout --api-key=$secret --password "$secret" --Auth_Token "$secret" DB_SECRET=$secret
	--keep-going --lr=0.1 plain-word)
# the recorded variables: NCCL_* and XLA_PYTHON_CLIENT_* by prefix, and by name
(umask 022 && export NCCL_IB_HCA=mlx5 NCCL_AUTH_PASSWORD=$secret NCCL_SOCKET_KEY=$secret \
	XLA_PYTHON_CLIENT_TOKEN=$secret XLA_PYTHON_CLIENT_PREALLOCATE=false \
	PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True && traced "$P" "${args[@]}" >out.txt) ||
	fail "exit $?"
t=$(the_trace)
expect_eq "mode" "$(stat -c %a "$t")" 600
! grep -aq "$secret" "$t" || fail "the secret is in the trace's bytes"
$GMT_CLI dump "$t" >d.txt || fail "dump"
! grep -q "$secret" d.txt || fail "the secret reads back: $(grep "$secret" d.txt)"
argv=$(grep -o 'argv\[[0-9]*\] \[.*\] env' d.txt)
expect_eq "argv" "$argv" "argv[11] [\"$P\", \"stdout\", \"--api-key=<redacted>\", \"--password\", \"<redacted>\", \"--Auth_Token\", \"<redacted>\", \"DB_SECRET=<redacted>\", \"--keep-going\", \"--lr=0.1\", \"plain-word\"] env"
for kv in '"NCCL_AUTH_PASSWORD": "<redacted>"' '"NCCL_SOCKET_KEY": "<redacted>"' \
	'"XLA_PYTHON_CLIENT_TOKEN": "<redacted>"' '"NCCL_IB_HCA": "mlx5"' \
	'"XLA_PYTHON_CLIENT_PREALLOCATE": "false"' '"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"'; do
	grep -qF "$kv" d.txt || fail "env $kv: $(grep -o 'env\[.*' d.txt)"
done
# explain still reads the allocator's settings it needs
$GMT_CLI summary "$t" >s.txt || fail "summary"
! grep -q "$secret" s.txt || fail "summary shows the secret"

# GPUMEMTRACE_RECORD_ARGV=0: no argv; the reports name the executable
rm -f gpumemtrace.*.gmt
GPUMEMTRACE_RECORD_ARGV=0 traced "$P" "${args[@]}" >/dev/null || fail "exit $?"
t=$(the_trace)
$GMT_CLI dump "$t" >d0.txt
grep -q 'argv\[0\] \[\]' d0.txt || fail "argv kept: $(grep PROCESS d0.txt)"
! grep -aq -- "--keep-going" "$t" || fail "an argv word is in the trace"
$GMT_CLI summary "$t" | grep -q "^process .*: $P\$" || fail "summary: $($GMT_CLI summary "$t" | grep ^process)"
echo ok
