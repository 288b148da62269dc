"""Trims a record_probe.so event file into a unit-test fixture: keeps XLA's
module, instruction and compile ranges (drops the compiler-pass ranges, a
push/pop pair each), one registration per string handle, driver calls,
graph node events and activity records. Usage: trim_fixture.py IN OUT"""

import json
import sys
from collections import defaultdict

DROPPED_TYPES = ("XlaPass", "XlaPassPipeline")


def trim(lines):
    strings = {}
    stacks = defaultdict(list)  # tid -> [kept?]
    out = []
    for line in lines:
        e = json.loads(line)
        fn = e.get("fn", "")
        if e["ev"] == "nvtx":
            if fn == "nvtxDomainRegisterStringA":
                if e.get("ret") in strings:
                    continue
                strings[e.get("ret")] = e["string"]
            elif fn == "nvtxDomainRangePushEx":
                msg = e.get("msg") if e["msg_type"] == 1 else strings.get(e.get("str_handle"), "")
                kept = msg.split(":#")[0] not in DROPPED_TYPES
                stacks[e["tid"]].append(kept)
                if not kept:
                    continue
            elif fn == "nvtxDomainRangePop":
                if stacks[e["tid"]] and not stacks[e["tid"]].pop():
                    continue
            elif fn != "nvtxDomainCreateA":
                continue
        elif e["ev"] == "api_exit":
            continue  # the replay needs only the entries
        e.pop("symbol", None)
        if "name" in e and e["ev"] != "nvtx":
            e["name"] = e["name"][:100]
        out.append(e)
    used = {e.get("str_handle") for e in out if e.get("fn") == "nvtxDomainRangePushEx"}
    return [json.dumps(e, separators=(",", ":")) for e in out
            if e.get("fn") != "nvtxDomainRegisterStringA" or e.get("ret") in used]


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        kept = trim(f)
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(kept) + "\n")
