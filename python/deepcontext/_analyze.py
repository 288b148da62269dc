"""`deepcontext analyze --rules FILE.py`: the built-in rules plus the rules
FILE.py registers with @deepcontext.rule, rendered by the same analyzer as
the CLI. The `deepcontext` command runs this module for --rules."""

import argparse
import runpy
import sys

from . import _profile


def main(argv=None):
    parser = argparse.ArgumentParser(prog="deepcontext analyze")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rules", required=True)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--rule", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        runpy.run_path(args.rules, run_name="deepcontext_rules")
    except Exception as error:  # the user's file: say where it failed
        sys.stderr.write("deepcontext analyze: %s: %s: %s\n"
                         % (args.rules, type(error).__name__, error))
        return 2
    try:
        profile = _profile.load(*args.files)
    except _profile.ProfileError as error:
        for line in str(error).splitlines():
            sys.stderr.write("deepcontext analyze: %s\n" % line)
        return 1
    try:
        output = profile.analyze(only=args.rule, format=args.format, top=args.top)
    except (TypeError, ValueError) as error:
        sys.stderr.write("deepcontext analyze: %s: %s\n" % (args.rules, error))
        return 2
    sys.stdout.write(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
