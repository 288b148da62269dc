"""Which cache lines of its code a function runs per call, from a callgrind
file written with --dump-instr=yes (op_path_callgrind.py --lines).

Per function of one object: its calls (how often its first instruction
ran), the 64-byte lines it ran code on, how many of those lines a call
touches on average (a line counts once per call, at most), and its
instruction-cache misses per call. A function that touches more lines per
call than its code needs carries code that its calls rarely run among the
code they always run, and misses on those lines all the same."""

import collections
import re
import subprocess

LINE = 64


def _name(table, value):
    """A compressed callgrind name: "(id) name" defines id, "(id)" uses it."""
    match = re.match(r"\((\d+)\)(?: (.*))?$", value)
    if not match:
        return value
    if match.group(2) is not None:
        table[match.group(1)] = match.group(2)
    return table.get(match.group(1), value)


def instruction_costs(path, object_part):
    """{function: {instruction address: [Ir, I1mr]}}: self costs of the
    functions of objects whose name contains `object_part`. Positions may
    be absolute, relative (+N, -N) or repeated (*); a call's inclusive
    cost line (after calls=) is not the caller's own."""
    tables = {"ob": {}, "fn": {}, "fl": {}}
    events = []
    positions = 1
    last = [0]
    object_name = function = None
    after_call = False
    costs = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    with open(path, errors="replace") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if not line:
                continue
            key, _, value = line.partition("=")
            if line.startswith("positions:"):
                positions = len(line.split()[1:])
                last = [0] * positions
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif key == "ob":
                object_name = _name(tables["ob"], value)
            elif key == "fn":
                function = _name(tables["fn"], value)
            elif key in ("fl", "fi", "fe", "cfi", "cfl"):
                _name(tables["fl"], value)
            elif key == "cob":
                _name(tables["ob"], value)
            elif key == "cfn":
                _name(tables["fn"], value)
            elif key == "calls":
                after_call = True
            elif line[0].isdigit() or line[0] in "+-*":
                fields = line.split()
                for i, position in enumerate(fields[:positions]):
                    if position == "*":
                        continue
                    if position[0] in "+-":
                        last[i] += int(position, 0)
                    else:
                        last[i] = int(position, 0)
                if after_call:
                    after_call = False
                    continue
                if object_name is None or object_part not in object_name:
                    continue
                values = [int(v) for v in fields[positions:]]
                values += [0] * (len(events) - len(values))
                own = costs[function][last[0]]
                own[0] += values[events.index("Ir")]
                own[1] += values[events.index("I1mr")]
    return {name: dict(by_address) for name, by_address in costs.items()}


def function_starts(library):
    """{demangled name: start address} of a shared object's functions, as
    callgrind names them (object-relative addresses)."""
    out = subprocess.run(["nm", "-C", library], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    starts = {}
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in ("t", "T"):
            starts[parts[2]] = int(parts[0], 16)
    return starts


def line_rows(costs, starts):
    """(name, calls, lines run, lines touched per call, I1mr per call) for
    each function whose first instruction ran."""
    rows = []
    for name, by_address in costs.items():
        calls = by_address.get(starts.get(name), [0])[0]
        if calls == 0:
            continue
        runs = collections.defaultdict(int)  # line: most runs of one of its instructions
        misses = 0
        for address, (ir, i1mr) in by_address.items():
            runs[address // LINE] = max(runs[address // LINE], ir)
            misses += i1mr
        touched = sum(min(1.0, count / calls) for count in runs.values())
        rows.append((name, calls, len(runs), touched, misses / calls))
    return rows


def lines_table(rows, count, short_name=lambda name: name):
    """The `count` functions with the most instruction-cache misses in
    all (per call times calls), as a markdown table."""
    rows = sorted(rows, key=lambda row: -row[4] * row[1])[:count]
    text = ["| function | calls | lines run | lines per call | I1mr per call |",
            "|---|---|---|---|---|"]
    for name, calls, lines, touched, misses in rows:
        text.append("| %s | %d | %d | %.1f | %.1f |" % (short_name(name), calls, lines,
                                                        touched, misses))
    return "\n".join(text)
