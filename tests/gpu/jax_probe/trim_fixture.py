"""Trims a record_probe.so event file into a unit-test fixture: keeps XLA's
module, instruction and compile ranges (drops the compiler-pass ranges, a
push/pop pair each), one registration per string handle, driver calls,
graph node events and activity records. With --one-thread, only the thread
that launched the most CUDA graphs (JAX's Python thread) and the records of its
calls are kept, besides every NVTX domain and string registration: the
compiler threads' autotuning is left out.
Usage: trim_fixture.py [--one-thread] IN OUT"""

import json
import sys
from collections import Counter, defaultdict

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


def one_thread(lines):
    events = [json.loads(line) for line in lines]
    # The thread that launches the command buffers; autotuning threads make
    # more driver calls.
    calls = Counter(e["tid"] for e in events
                    if e["ev"] == "api" and e["fn"].startswith("cuGraphLaunch"))
    calls = calls or Counter(e["tid"] for e in events if e["ev"] == "api")
    main = calls.most_common(1)[0][0]
    correlations = {e["corr"] for e in events if e["ev"] == "api" and e["tid"] == main}
    kept = []
    for e in events:
        if e["ev"] in ("kernel", "memcpy", "memset"):
            keep = e["corr"] in correlations
        else:
            keep = e.get("tid") == main or e.get("fn") in ("nvtxDomainCreateA",
                                                           "nvtxDomainRegisterStringA")
        if keep:
            kept.append(json.dumps(e, separators=(",", ":")))
    return kept


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--one-thread"]
    with open(args[0]) as f:
        kept = trim(f)
    if "--one-thread" in sys.argv:
        kept = one_thread(kept)
    with open(args[1], "w") as f:
        f.write("\n".join(kept) + "\n")
