// Every number a rule compares against, in one place. docs/ANALYZER.md
// gives each one's source and justification; change both together.
#pragma once

#include <cstdint>

namespace deepcontext::analyzer {

struct Thresholds {
  // Findings whose upper benefit is below this share of the profiled time
  // are dropped (scalene's and HTA's 1 % line cutoff).
  double min_benefit_share = 0.01;

  // gpu_idle: GPU busy time / profiled wall time below this (TensorBoard
  // profiler plugin: busy < 50 %).
  double gpu_busy_low = 0.5;
  // gpu_idle: Python lines named as holding the CPU must hold at least this
  // share of the host time.
  double cpu_holder_share = 0.05;

  // host_device_sync: time waited in synchronizations under one line, as a
  // share of the profiled wall time (anchor: fire only at >= 1 % of step).
  double sync_min_share = 0.01;
  // host_device_sync: a line must synchronize at least this often: a
  // single wait at the end of a loop (or of the program) is necessary, one
  // inside the loop repeats every step.
  double sync_min_count = 10;

  // pageable_copy: copies smaller than this are exempt (Nsight Systems
  // cuda_memcpy_sync exempts H2D <= 64 KiB).
  double pageable_min_bytes = 64 * 1024;
  // pageable_copy: a line must copy at least this often. A one-time load
  // (weights, an embedding table: the H200 fwd_bwd_imbalance twins moved a
  // 4 GiB table once) gains nothing from pinning, which costs a copy too.
  double pageable_min_copies = 10;
  // pageable_copy: pinned host->device bandwidth assumed for the benefit
  // (bytes per ns = GB/s). The H200 twins copied 38.5 MB batches at 14 GB/s
  // from pageable memory and at about 50 GB/s pinned (PCIe Gen5 x16).
  double pinned_bytes_per_ns = 50.0;

  // fwd_bwd_imbalance: backward / forward time of one operator above this
  // (backward:forward FLOPs ~2:1, up to 3:1 for ordinary layers).
  double backward_forward_ratio = 3.0;
  // fwd_bwd_imbalance: the backward must cost at least this share.
  double imbalance_min_share = 0.02;

  // unfused_elementwise: at least this many elementwise operators (HTA's
  // frequent-pattern min_pattern_len = 3) called under one source line.
  int elementwise_chain_min = 3;

  // slow_optimizer: share of the for-loop implementation's time that the
  // foreach/fused implementations save (ranges). Measured with the twins
  // tests/analyzer/programs/*slow_optimizer*: on the H200 fused Adam saved
  // 96 % of the step; on CPU (torch 1.13, foreach) about 35 %.
  double optimizer_saving_low_gpu = 0.5;
  double optimizer_saving_high_gpu = 0.95;
  double optimizer_saving_low_cpu = 0.05;
  double optimizer_saving_high_cpu = 0.5;

  // launch_bound: mean kernel time below this is a "short" kernel, i.e.
  // shorter than a launch (HTA: launch 5-20 us; ours measured ~5 us on the
  // H200 by bench/gpu_launch_cost.cc).
  double short_kernel_ns = 10000;
  double launch_cost_ns = 5000;
  // launch_bound: at least this many kernel runs under one line.
  double launch_bound_min_kernels = 200;

  // tensor_cores_unused: compute capability from which tensor cores exist.
  double tensor_core_min_cc = 7.0;
  // tensor_cores_unused: fraction of FP32 GEMM time TF32/BF16 tensor cores
  // save (range; H100/H200 dense FP32 67 TFLOPS vs TF32 495 TFLOPS, floored
  // by memory-bound GEMMs).
  double tensor_core_saving_low = 0.3;
  double tensor_core_saving_high = 0.85;

  // low_occupancy: kernels with theoretical occupancy below this, or grids
  // smaller than the SM count (Nsight Compute LaunchConfiguration and
  // TheoreticalOccupancy rules use < #SMs and < 80 %; we use 50 % because
  // GEMM/attention kernels are excluded and run well at lower occupancy).
  double occupancy_low = 0.5;
  // low_occupancy: the kernel must hold at least this share of GPU time.
  double occupancy_min_kernel_share = 0.01;

  // memory_peak: source lines whose allocations hold at least this share of
  // the device memory peak are named (the anchor's 10 % holders).
  double memory_holder_share = 0.10;
  // memory_peak: one line holding at least this share of the peak is high
  // severity (it alone decides whether the next batch size fits), but only
  // when the device is nearly full: the allocator's reserved peak at least
  // memory_pressure_high of the device's memory. Below memory_pressure_medium
  // the peak is no problem yet and findings are low; with the device's size
  // unknown (older profiles) they are medium at most. On the H200 ResNet-50
  // b64 and GPT-2 b8 reserved 5 % and 7 % of the device: low.
  double memory_holder_high_share = 0.3;
  double memory_pressure_high = 0.8;
  double memory_pressure_medium = 0.5;
};

}  // namespace deepcontext::analyzer
