"""`python3 -m deepcontext ARGS` runs the `deepcontext` command with ARGS."""

import os
import sys

from . import _paths


def main():
    try:
        cli = _paths.cli()
    except FileNotFoundError as error:
        sys.stderr.write("deepcontext: %s\n" % error)
        return 2
    if not os.access(cli, os.X_OK):
        sys.stderr.write("deepcontext: the command %s is missing; build it with `make`\n" % cli)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    # argv[0] is what usage messages name: the command, not its path.
    os.execv(cli, ["deepcontext"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
