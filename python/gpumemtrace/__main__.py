"""python -m gpumemtrace ARGS, and the `gpumemtrace` console script: the
command-line tool bundled in the package, with the same arguments, exit
status and output. `export --format parquet` is done here in Python
(gpumemtrace.parquet, needs pyarrow); everything else is the C tool's."""
import os
import sys

from . import _paths


def _parquet_export(argv):
    """True for `export ... --format parquet` (or -f parquet, --format=parquet)."""
    if not argv or argv[0] != "export":
        return False
    for i, a in enumerate(argv[1:], 1):
        if a == "--":
            return False
        if a in ("--format", "-f") and i + 1 < len(argv):
            return argv[i + 1] == "parquet"
        if a == "--format=parquet":
            return True
    return False


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["kernel"]:  # Jupyter: a traced kernel (gpumemtrace.kernel)
        from . import kernel  # pylint: disable=import-outside-toplevel

        return kernel.main(argv[1:])
    if _parquet_export(argv):
        from . import parquet  # pylint: disable=import-outside-toplevel

        return parquet.main(argv[1:])
    cli = _paths.cli()
    if cli is None:
        sys.stderr.write(_paths.missing("the gpumemtrace command-line tool") + "\n")
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(cli, ["gpumemtrace"] + argv)  # its exit status is ours
    except OSError as err:
        sys.stderr.write("gpumemtrace: cannot run %s: %s\n" % (cli, err))
        return 126
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
