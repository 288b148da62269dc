"""Checks a `deepcontext run --gpu-samples` profile of programs/gpu_stalls.py:
prints the stall reasons of each sampled kernel and whether they point the
right way (copy_kernel memory-bound, fma_kernel not) and hang under the
Python line that launched them. Exit status 1 when a check fails.

Usage: PYTHONPATH=<build>/python check_stalls.py PROFILE PROGRAM"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

import deepcontext  # noqa: E402
from markers import marker_line  # noqa: E402

MEMORY_REASONS = {"long_scoreboard", "lg_throttle", "drain", "tex_throttle"}
COMPUTE_REASONS = {"math_pipe_throttle", "wait", "not_selected", "selected",
                   "dispatch_stall", "short_scoreboard", "mio_throttle"}
EXPECTED = {"copy_kernel": ("COPY_LAUNCH_LINE", MEMORY_REASONS),
            "fma_kernel": ("FMA_LAUNCH_LINE", COMPUTE_REASONS)}
# Where in the program the hottest source line of each kernel must be:
# (marker, lines before, lines after). A load's wait shows on the
# instruction that uses it, the line after the load.
HOT_LINES = {"copy_kernel": ("MEMORY_LOAD_LINE", 0, 1),
             "fma_kernel": ("COMPUTE_LINE", 1, 3)}


def main(profile_path, program):
    profile = deepcontext.load(profile_path)
    meta = profile.metadata
    print("gpu_samples:", meta.get("gpu_samples", "(absent)"))
    for key in sorted(meta):
        if key.startswith("gpu_samples_") or key.startswith("warning_"):
            print("%s: %s" % (key, meta[key]))
    stalls = [m for m in profile.metrics if m.startswith("gpu_stall_")]
    failures = []
    seen = set()
    for kernel in profile.find(kind="gpu_kernel"):
        samples = kernel.inclusive("gpu_samples")
        if samples <= 0:
            continue
        reasons = sorted(((kernel.inclusive(m), m[len("gpu_stall_"):]) for m in stalls),
                         reverse=True)
        reasons = [(v, r) for v, r in reasons if v > 0]
        # The launch line in the program; a Triton kernel's nearest Python
        # frame is Triton's launcher.
        pythons = [a for a in kernel.ancestors() if a.kind == "python"]
        line = next((a for a in pythons if os.path.basename(a.file) == os.path.basename(program)),
                    pythons[0] if pythons else None)
        where = "%s:%d" % (os.path.basename(line.file), line.line) if line else "?"
        instructions = [c for c in kernel.children if c.kind == "gpu_instruction"]
        hottest = max(instructions, key=lambda c: c.inclusive("gpu_samples"), default=None)
        print("\n%s  launched at %s  gpu_time %.2f ms  samples %d  instructions %d" % (
            kernel.name, where, kernel.inclusive("gpu_time") / 1e6, samples, len(instructions)))
        for value, reason in reasons[:6]:
            print("  %-22s %5.1f%%" % (reason, 100.0 * value / samples))
        if hottest is not None:
            print("  hottest: %s (%.0f%%) at %s:%d" % (
                hottest.name, 100.0 * hottest.inclusive("gpu_samples") / samples,
                os.path.basename(hottest.file) or "?", hottest.line))
        by_line = {}
        for instruction in instructions:
            if instruction.line:
                key = (os.path.basename(instruction.file), instruction.line)
                by_line[key] = by_line.get(key, 0) + instruction.inclusive("gpu_samples")
        for (file, number), value in sorted(by_line.items(), key=lambda e: -e[1])[:3]:
            print("  line %s:%d  %.0f%% of samples" % (file, number, 100.0 * value / samples))
        short = kernel.name.split("(")[0]
        if short not in EXPECTED:
            continue
        seen.add(short)
        marker, allowed = EXPECTED[short]
        if line is None or line.line != marker_line(program, marker):
            failures.append("%s is not under %s (found %s)" % (short, marker, where))
        stalled = [(v, r) for v, r in reasons if r != "selected"]
        dominant = stalled[0][1] if stalled else "(none)"
        verdict = "PASS" if dominant in allowed else "FAIL"
        print("  %s: dominant stall %s" % (verdict, dominant))
        if verdict == "FAIL":
            failures.append("%s: dominant stall %s, expected one of %s" % (
                short, dominant, sorted(allowed)))
        marker, before, after = HOT_LINES[short]
        anchor = marker_line(program, marker)
        name = os.path.basename(program)
        hot = [k for k, _ in sorted(by_line.items(), key=lambda e: -e[1]) if k[0] == name]
        if not hot:
            failures.append("%s: no instruction has a line of %s (cubin without line "
                            "info?)" % (short, name))
        elif not anchor - before <= hot[0][1] <= anchor + after:
            failures.append("%s: hottest line %d, expected %d..%d (%s)" % (
                short, hot[0][1], anchor - before, anchor + after, marker))
        else:
            print("  PASS: hottest line %d is at %s" % (hot[0][1], marker))
    for name in EXPECTED:
        if name not in seen:
            failures.append("no instruction samples for %s" % name)
    print()
    for failure in failures:
        print("FAIL:", failure)
    print("stall check:", "FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
