"""Checks a `deepcontext run --gpu-metrics` profile of
programs/gpu_metrics.py: prints the hardware counters of each measured
kernel and whether they point the right way (copy_kernel: DRAM throughput
high; fma_kernel: SM throughput high and DRAM low; the GEMM: tensor pipe
busy where the chip reports it), and that the measured launches, which CUPTI
replays and does not time, add no gpu_time sample (each counts in
gpu_untimed_launches instead, so every gpu_time sample is a timed launch).
Exit status 1 when a check fails.

Usage: PYTHONPATH=<build>/python check_metrics.py PROFILE"""

import sys

import deepcontext

METRICS = ("gpu_occupancy_achieved", "gpu_sm_throughput_pct", "gpu_dram_throughput_pct",
           "gpu_tensor_pipe_pct")


def mean(node, metric):
    count = node.count(metric)
    return node.exclusive(metric) / count if count else None


def main(profile_path):
    profile = deepcontext.load(profile_path)
    meta = profile.metadata
    for key in sorted(meta):
        if key.startswith("gpu_metrics") or key.startswith("warning_"):
            print("%s: %s" % (key, meta[key]))
    by_kernel = {}
    failures = []
    timed_records = 0
    for kernel in profile.find(kind="gpu_kernel"):
        timed_records += kernel.count("gpu_time")
        if not kernel.count("gpu_sm_throughput_pct"):
            continue
        values = {m: mean(kernel, m) for m in METRICS}
        launches = kernel.count("gpu_sm_throughput_pct")
        untimed = kernel.count("gpu_untimed_launches")
        print("%-60s measured %2d  occ %s  sm %s%%  dram %s%%  tensor %s%%  gpu_time %.2f ms"
              " in %d timed records, %d untimed" % (
            kernel.name[:60], launches,
            *("%.2f" % v if v is not None else "-" for v in (values[METRICS[0]],)),
            *("%.1f" % v if v is not None else "-" for v in
              (values[METRICS[1]], values[METRICS[2]], values[METRICS[3]])),
            kernel.inclusive("gpu_time") / 1e6, kernel.count("gpu_time"), untimed))
        # A measurement CUPTI started but could not finish replayed the
        # launch too: untimed, without counters.
        if untimed < launches or (untimed > launches and "gpu_metrics_failed" not in meta):
            failures.append("%s: %d launches measured, %d untimed (CUPTI timed measured "
                            "launches?)" % (kernel.name[:40], launches, untimed))
        short = kernel.name.split("(")[0]
        by_kernel.setdefault(short, values)
    # The device's kernel count counts records with a duration: equal to the
    # gpu_time samples when none of them is a 0 (one GPU).
    device_kernels = meta.get("gpu0_kernels")
    print("gpu_time samples %d, gpu0_kernels %s, gpu_untimed_kernel_records %s" % (
        timed_records, device_kernels, meta.get("gpu_untimed_kernel_records", "0")))
    if device_kernels is not None and "gpu1_kernels" not in meta \
            and int(device_kernels) != timed_records:
        failures.append("%d gpu_time samples but %s kernels with a duration" % (
            timed_records, device_kernels))
    copy = by_kernel.get("copy_kernel")
    fma = by_kernel.get("fma_kernel")
    gemms = [v for k, v in by_kernel.items()
             if any(part in k.lower() for part in ("gemm", "xmma", "nvjet", "cutlass", "sm90"))]
    if copy is None or fma is None:
        failures.append("copy_kernel or fma_kernel has no counters")
    else:
        if not (copy["gpu_dram_throughput_pct"] or 0) > 50:
            failures.append("copy_kernel DRAM %% is %s, expected > 50" % copy["gpu_dram_throughput_pct"])
        if not (fma["gpu_sm_throughput_pct"] or 0) > 50:
            failures.append("fma_kernel SM %% is %s, expected > 50" % fma["gpu_sm_throughput_pct"])
        if not (fma["gpu_dram_throughput_pct"] or 0) < (copy["gpu_dram_throughput_pct"] or 0):
            failures.append("fma_kernel's DRAM % is not below copy_kernel's")
    if gemms and gemms[0]["gpu_tensor_pipe_pct"] is not None:
        print("GEMM tensor pipe: %.1f%%" % gemms[0]["gpu_tensor_pipe_pct"])
    for failure in failures:
        print("FAIL:", failure)
    print("PASS" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
