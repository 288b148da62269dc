#include "runtime/cupti/driver_api.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runtime/cupti/cupti_functions.h"
#include "runtime/cupti/cupti_loader.h"

namespace deepcontext::cupti {
namespace {

TEST(DriverApiTest, ClassifiesByNameIncludingVariants) {
  EXPECT_EQ(ClassifyDriverApi("cuLaunchKernel"), DriverApiClass::kKernelLaunch);
  EXPECT_EQ(ClassifyDriverApi("cuLaunchKernelEx_ptsz"), DriverApiClass::kKernelLaunch);
  EXPECT_EQ(ClassifyDriverApi("cuLaunchCooperativeKernel"),
            DriverApiClass::kKernelLaunch);
  EXPECT_EQ(ClassifyDriverApi("cuLaunchGridAsync"), DriverApiClass::kKernelLaunch);
  EXPECT_EQ(ClassifyDriverApi("cuLaunchHostFunc_ptsz"), DriverApiClass::kOther);
  EXPECT_EQ(ClassifyDriverApi("cuGraphLaunch_ptsz"), DriverApiClass::kGraphLaunch);
  EXPECT_EQ(ClassifyDriverApi("cuGraphAddKernelNode_v2"), DriverApiClass::kGraphBuild);
  EXPECT_EQ(ClassifyDriverApi("cuGraphInstantiateWithFlags"), DriverApiClass::kOther);
  EXPECT_EQ(ClassifyDriverApi("cuGraphNodeSetEnabled"), DriverApiClass::kGraphExecEdit);
  EXPECT_EQ(ClassifyDriverApi("cuGraphNodeGetEnabled"), DriverApiClass::kOther);
  EXPECT_EQ(ClassifyDriverApi("cuMemcpyHtoDAsync_v2_ptsz"), DriverApiClass::kCopy);
  EXPECT_EQ(ClassifyDriverApi("cuMemcpy3DPeer"), DriverApiClass::kCopy);
  EXPECT_EQ(ClassifyDriverApi("cuMemsetD2D32Async"), DriverApiClass::kMemset);
  EXPECT_EQ(ClassifyDriverApi("cuCtxSynchronize_v2"), DriverApiClass::kSync);
  EXPECT_EQ(ClassifyDriverApi("cuStreamSynchronize_ptsz"), DriverApiClass::kSync);
  EXPECT_EQ(ClassifyDriverApi("cuEventSynchronize"), DriverApiClass::kSync);
  EXPECT_EQ(ClassifyDriverApi("cuStreamWaitEvent"), DriverApiClass::kSync);
  EXPECT_EQ(ClassifyDriverApi("cuStreamWaitValue32"), DriverApiClass::kOther);
  EXPECT_EQ(ClassifyDriverApi("cuMemAlloc_v2"), DriverApiClass::kOther);
  EXPECT_EQ(ClassifyDriverApi("cuEventRecord"), DriverApiClass::kOther);
  EXPECT_EQ(ClassifyDriverApi(""), DriverApiClass::kOther);
}

TEST(DriverApiTest, SynchronizationsAreNamedByWhatTheyWaitFor) {
  EXPECT_EQ(SyncKindOfApi("cuCtxSynchronize"), gpu::SyncKind::kContext);
  EXPECT_EQ(SyncKindOfApi("cuCtxSynchronize_v2"), gpu::SyncKind::kContext);
  EXPECT_EQ(SyncKindOfApi("cuStreamSynchronize_ptsz"), gpu::SyncKind::kStream);
  EXPECT_EQ(SyncKindOfApi("cuEventSynchronize"), gpu::SyncKind::kEvent);
  EXPECT_EQ(SyncKindOfApi("cuStreamWaitEvent_ptsz"), gpu::SyncKind::kStreamWaitEvent);
  EXPECT_EQ(SyncKindOfApi("cuLaunchKernel"), gpu::SyncKind::kUnknown);
  // Every function classified as a synchronization has a kind.
  for (const char* name : {"cuCtxSynchronize", "cuStreamSynchronize",
                           "cuEventSynchronize", "cuStreamWaitEvent"}) {
    EXPECT_EQ(ClassifyDriverApi(name), DriverApiClass::kSync) << name;
    EXPECT_NE(SyncKindOfApi(name), gpu::SyncKind::kUnknown) << name;
  }
}

TEST(DriverApiTest, ExpectedRecordsAreUnknownForMultiRecordCalls) {
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kKernelLaunch, "cuLaunchKernel"), 1u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kKernelLaunch,
                            "cuLaunchCooperativeKernelMultiDevice"),
            0u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kGraphLaunch, "cuGraphLaunch"), 0u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kCopy, "cuMemcpyAsync"), 1u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kCopy, "cuMemcpyBatchAsync_v2"), 0u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kMemset, "cuMemsetD8_v2"), 1u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kSync, "cuStreamSynchronize"), 1u);
  EXPECT_FALSE(ProducesRecords(DriverApiClass::kGraphBuild));
  EXPECT_FALSE(ProducesRecords(DriverApiClass::kGraphExecEdit));
  EXPECT_FALSE(ProducesRecords(DriverApiClass::kOther));
  EXPECT_TRUE(ProducesRecords(DriverApiClass::kGraphLaunch));
}

TEST(DriverApiTest, CallsOfUntracedKindsExpectNoRecords) {
  TracedActivity traced;
  traced.memsets = false;
  traced.syncs = false;
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kMemset, "cuMemsetD8_v2", traced), 0u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kSync, "cuCtxSynchronize", traced), 0u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kCopy, "cuMemcpyAsync", traced), 1u);
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kKernelLaunch, "cuLaunchKernel", traced),
            1u);
  // A copy may be peer to peer (the other copy kind): with one kind
  // traced, whether it produces a record is not known.
  traced.peer_copies = false;
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kCopy, "cuMemcpyAsync", traced), 0u);
  traced = TracedActivity{};
  traced.kernels = false;
  EXPECT_EQ(ExpectedRecords(DriverApiClass::kKernelLaunch, "cuLaunchKernel", traced),
            0u);
}

// The names CUPTI itself reports for the driver callback ids: the traced
// set must contain the launch paths PyTorch and XLA use.
TEST(DriverApiTest, CuptiCallbackNamesClassifyAsExpected) {
  const CuptiLibrary& library = CuptiLibrary::Get();
  if (!library.available()) GTEST_SKIP() << library.status().message();
  std::map<std::string, DriverApiClass> traced;
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (library.functions()->get_callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid,
                                               &name) != CUPTI_SUCCESS ||
        name == nullptr) {
      continue;
    }
    const DriverApiClass api = ClassifyDriverApi(name);
    if (api != DriverApiClass::kOther) traced[name] = api;
  }
  const std::map<std::string, DriverApiClass> expected = {
      {"cuLaunchKernel", DriverApiClass::kKernelLaunch},
      {"cuLaunchKernel_ptsz", DriverApiClass::kKernelLaunch},
      {"cuLaunchKernelEx", DriverApiClass::kKernelLaunch},
      {"cuLaunchCooperativeKernel", DriverApiClass::kKernelLaunch},
      {"cuGraphLaunch", DriverApiClass::kGraphLaunch},
      {"cuMemcpyHtoDAsync_v2", DriverApiClass::kCopy},
      {"cuMemcpyAsync", DriverApiClass::kCopy},
      {"cuMemsetD32Async", DriverApiClass::kMemset},
      {"cuStreamSynchronize", DriverApiClass::kSync},
      {"cuCtxSynchronize", DriverApiClass::kSync},
      {"cuEventSynchronize", DriverApiClass::kSync},
      {"cuStreamWaitEvent", DriverApiClass::kSync},
      {"cuGraphNodeSetEnabled", DriverApiClass::kGraphExecEdit},
  };
  for (const auto& [name, api] : expected) {
    auto it = traced.find(name);
    ASSERT_NE(it, traced.end()) << name;
    EXPECT_EQ(it->second, api) << name;
  }
  EXPECT_EQ(traced.count("cuLaunchHostFunc"), 0u);
  // Launch, copy, memset and sync variants, but far from every function.
  EXPECT_GT(traced.size(), 100u);
  EXPECT_LT(traced.size(), 250u);
}

}  // namespace
}  // namespace deepcontext::cupti
