#include "tests/unit/tools/analyzer/gpu_profiles.h"

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analyzer::testing {

using analysis::testing::ProfileBuilder;
using format::FrameKind;
using format::NodeId;

namespace {

constexpr const char* kFile = "/home/user/train.py";

NodeId Line(ProfileBuilder& b, NodeId parent, uint32_t line) {
  return b.Add(parent, FrameKind::kPythonFrame, "train", kFile, line);
}

// A kernel node under op -> cuLaunchKernel, with count runs.
NodeId Kernel(ProfileBuilder& b, NodeId op, const std::string& name, double ns,
              double runs) {
  NodeId api = b.Add(op, FrameKind::kGpuApi, "cuLaunchKernel");
  NodeId kernel = b.Add(api, FrameKind::kGpuKernel, name);
  b.Value(kernel, "gpu_time", ns, static_cast<uint64_t>(runs));
  return kernel;
}

}  // namespace

format::Profile MakeGpuProfile(const GpuProfileSpec& spec) {
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("wall_time", "ns");
  b.Metric("gpu_time", "ns");
  b.Metric("sync_time", "ns");
  b.Metric("bytes", "B");
  b.Metric("blocks", "");
  b.Metric("occupancy", "");
  b.Meta("start_time_ns", "1000000000");
  b.Meta("end_time_ns", "2000000000");
  b.Meta("gpu0_busy_ns",
         std::to_string(static_cast<long long>(spec.gpu_busy_ns)));
  b.Meta("gpu0_compute_capability", "9.0");
  if (spec.gpu_span_ns > 0) {
    b.Meta("gpu0_first_start_ns", "1100000000");
    b.Meta("gpu0_last_end_ns",
           std::to_string(1100000000LL +
                          static_cast<long long>(spec.gpu_span_ns)));
  }
  b.Meta("gpu0_sm_count", "132");
  NodeId thread = b.Add(0, FrameKind::kThread, "main thread");
  NodeId module = b.Add(thread, FrameKind::kPythonFrame, "<module>", kFile, 99);

  NodeId loader = Line(b, module, 42);
  NodeId getitem = b.Add(loader, FrameKind::kOperator, "aten::stack");
  b.Value(getitem, "wall_time", spec.loader_host_ns, 100);

  if (spec.sync_ns > 0) {
    NodeId item =
        b.Add(Line(b, module, 50), FrameKind::kOperator, "aten::item");
    NodeId dense =
        b.Add(item, FrameKind::kOperator, "aten::_local_scalar_dense");
    NodeId api = b.Add(dense, FrameKind::kGpuApi, "cuStreamSynchronize");
    NodeId sync = b.Add(api, FrameKind::kGpuSync, "sync: stream");
    b.Value(sync, "sync_time", spec.sync_ns,
            static_cast<uint64_t>(spec.sync_count));
  }
  if (spec.pageable_bytes > 0) {
    NodeId to = b.Add(Line(b, module, 30), FrameKind::kOperator, "aten::to");
    NodeId api = b.Add(to, FrameKind::kGpuApi, "cuMemcpyHtoDAsync_v2");
    NodeId copy = b.Add(api, FrameKind::kGpuMemcpy, "memcpy HtoD (pageable)");
    b.Value(copy, "gpu_time", spec.pageable_ns,
            static_cast<uint64_t>(spec.pageable_count));
    b.Value(copy, "bytes", spec.pageable_bytes,
            static_cast<uint64_t>(spec.pageable_count));
  }
  NodeId mm = b.Add(Line(b, module, 60), FrameKind::kOperator, "aten::mm");
  NodeId gemm = Kernel(b, mm, spec.gemm_kernel, spec.gemm_ns, 100);
  b.Value(gemm, "blocks", 100 * 264.0, 100);
  b.Value(gemm, "occupancy", 100 * 0.125, 100);

  if (spec.tiny_kernels > 0) {
    NodeId line = Line(b, module, 70);
    NodeId add = b.Add(line, FrameKind::kOperator, "aten::add_");
    b.Value(add, "wall_time", spec.tiny_host_ns,
            static_cast<uint64_t>(spec.tiny_kernels));
    Kernel(b, add, "vectorized_elementwise_kernel", spec.tiny_kernels * 3000,
           spec.tiny_kernels);
  }
  if (spec.custom_kernel_ns > 0) {
    NodeId op = b.Add(Line(b, module, 80), FrameKind::kOperator, "mylib::op");
    for (int i = 0; i < spec.custom_kernels; ++i) {
      std::string name =
          i == 0 ? "my_kernel" : "my_kernel_" + std::to_string(i);
      NodeId k = Kernel(b, op, name, spec.custom_kernel_ns, 100);
      b.Value(k, "blocks", 100 * spec.custom_blocks, 100);
      b.Value(k, "occupancy", 100 * spec.custom_occupancy, 100);
    }
  }
  return b.profile();
}

}  // namespace deepcontext::analyzer::testing
