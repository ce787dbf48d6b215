# bash completion for gpumemtrace
_gpumemtrace() {
	local cur prev cmd opts
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmds="run summary accounting top growth fragmentation oom leaks diff check plot flamegraph export dump help"
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
		return
	fi
	cmd=${COMP_WORDS[1]}
	# after "run ... --" complete the command to run
	local i
	for ((i = 2; i < COMP_CWORD; i++)); do
		if [ "$cmd" = run ] && [ "${COMP_WORDS[i]}" = "--" ]; then
			COMPREPLY=($(compgen -c -- "$cur"))
			return
		fi
	done
	case $prev in
	--by) COMPREPLY=($(compgen -W "stack function library api range kind" -- "$cur")); return ;;
	--sort) COMPREPLY=($(compgen -W "peak end total calls" -- "$cur")); return ;;
	--at) COMPREPLY=($(compgen -W "peak end" -- "$cur")); return ;;
	--format | -f) COMPREPLY=($(compgen -W "perfetto csv pprof" -- "$cur")); return ;;
	-o | --output | --junit | --baseline) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	case $cmd in
	run) opts="--output -o --stack-depth --check-max-peak --no-follow --quiet -q --help --" ;;
	summary) opts="--json --help" ;;
	accounting) opts="--json --device --help" ;;
	top) opts="--json --by --sort --depth --limit --help" ;;
	leaks) opts="--json --by --depth --help" ;;
	growth | fragmentation | oom | diff) opts="--json --help" ;;
	check) opts="--json --max-peak --max-live-at-end --baseline --max-increase --junit --device --ignore-library --help" ;;
	plot) opts="--output -o --by --device --help" ;;
	flamegraph) opts="--output -o --at --folded --help" ;;
	export) opts="--format -f --output -o --at --help" ;;
	dump) opts="--help" ;;
	help) COMPREPLY=($(compgen -W "$cmds" -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _gpumemtrace gpumemtrace
