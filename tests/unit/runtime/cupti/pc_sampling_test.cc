// Instruction sampling on the CPU: the CUPTI PC sampling entry points are
// replaced by fakes that replay records shaped like CUPTI's
// (fixtures/pc_sampling_hopper.txt), and the test checks the calls the
// session makes and the instruction nodes and stall metrics it produces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/cupti/pc_sampling.h"
#include "runtime/cupti/pc_sampling_aggregator.h"
#include "runtime/cupti/pc_sampling_functions.h"
#include "runtime/cupti/pc_sampling_session.h"
#include "tests/unit/runtime/cupti/sampling_sink.h"
#include "tests/unit/scratch_dir.h"

namespace deepcontext::cupti {
namespace {

using fake::SamplingSink;

// The replayed CUPTI.
struct FakePcCupti {
  struct Pc {
    uint32_t correlation;
    std::string function;
    uint64_t crc, offset;
    std::vector<CUpti_PCSamplingStallReason> stalls;
  };
  struct Batch {
    std::vector<Pc> pcs;
    uint64_t dropped = 0, non_user = 0;
  };
  std::vector<std::pair<uint32_t, std::string>> reasons;
  std::deque<Batch> batches;  // one per completed kernel group
  std::vector<std::string> calls;
  std::map<int, int> config;  // attribute type -> times set
  CUpti_PCSamplingCollectionMode mode{};
  CUpti_PCSamplingData* final_buffer = nullptr;
  size_t selected_reasons = 0;
  CUptiResult enable_result = CUPTI_SUCCESS;
  std::vector<std::string> names;  // keeps function name storage alive
  // Batches handed over only after this many GetData calls: what is not
  // parsed yet comes later.
  bool ready = true;
};
FakePcCupti* g_fake = nullptr;

std::vector<std::string> Split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

void LoadFixture(FakePcCupti& fake) {
  std::ifstream in(std::string(DEEPCONTEXT_PC_FIXTURES) + "/pc_sampling_hopper.txt");
  ASSERT_TRUE(in.good());
  FakePcCupti::Batch batch;
  for (std::string line; std::getline(in, line);) {
    const auto words = Split(line);
    if (words.empty() || words[0].starts_with("#")) continue;
    if (words[0] == "reason") {
      fake.reasons.emplace_back(std::stoul(words[1]), words[2]);
    } else if (words[0] == "pc") {
      FakePcCupti::Pc pc{static_cast<uint32_t>(std::stoul(words[1])), words[2],
                         std::stoull(words[3]), std::stoull(words[4], nullptr, 16), {}};
      for (size_t i = 5; i < words.size(); ++i) {
        const size_t colon = words[i].find(':');
        pc.stalls.push_back({static_cast<uint32_t>(std::stoul(words[i].substr(0, colon))),
                             static_cast<uint32_t>(std::stoul(words[i].substr(colon + 1)))});
      }
      batch.pcs.push_back(pc);
    } else if (words[0] == "batch") {
      batch.dropped = std::stoull(words[1]);
      batch.non_user = std::stoull(words[2]);
      fake.batches.push_back(batch);
      batch = {};
    }
  }
}

CUptiResult FakeGetNum(CUpti_PCSamplingGetNumStallReasonsParams* p) {
  g_fake->calls.push_back("GetNumStallReasons");
  if (p->size != CUpti_PCSamplingGetNumStallReasonsParamsSize) return CUPTI_ERROR_INVALID_PARAMETER;
  *p->numStallReasons = g_fake->reasons.size();
  return CUPTI_SUCCESS;
}
CUptiResult FakeGetReasons(CUpti_PCSamplingGetStallReasonsParams* p) {
  g_fake->calls.push_back("GetStallReasons");
  if (p->numStallReasons != g_fake->reasons.size()) return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < p->numStallReasons; ++i) {
    p->stallReasonIndex[i] = g_fake->reasons[i].first;
    std::strncpy(p->stallReasons[i], g_fake->reasons[i].second.c_str(),
                 CUPTI_STALL_REASON_STRING_SIZE - 1);
  }
  return CUPTI_SUCCESS;
}
CUptiResult FakeSetConfig(CUpti_PCSamplingConfigurationInfoParams* p) {
  g_fake->calls.push_back("SetConfigurationAttribute");
  for (size_t i = 0; i < p->numAttributes; ++i) {
    const auto& info = p->pPCSamplingConfigurationInfo[i];
    ++g_fake->config[info.attributeType];
    switch (info.attributeType) {
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
        g_fake->mode = info.attributeData.collectionModeData.collectionMode;
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
        g_fake->final_buffer = static_cast<CUpti_PCSamplingData*>(
            info.attributeData.samplingDataBufferData.samplingDataBuffer);
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON:
        g_fake->selected_reasons = info.attributeData.stallReasonData.stallReasonCount;
        break;
      default:
        break;
    }
  }
  return CUPTI_SUCCESS;
}
CUptiResult FakeEnable(CUpti_PCSamplingEnableParams*) {
  g_fake->calls.push_back("Enable");
  return g_fake->enable_result;
}

// Moves up to collectNumPcs records of the front batch into `data`.
void Fill(CUpti_PCSamplingData* data) {
  data->totalNumPcs = 0;
  data->remainingNumPcs = 0;
  if (g_fake->batches.empty() || !g_fake->ready) return;
  auto& batch = g_fake->batches.front();
  size_t n = 0;
  while (n < data->collectNumPcs && !batch.pcs.empty()) {
    const auto& pc = batch.pcs.front();
    auto& out = data->pPcData[n++];
    g_fake->names.push_back(pc.function);
    out.functionName = strdup(pc.function.c_str());
    out.correlationId = pc.correlation;
    out.cubinCrc = pc.crc;
    out.pcOffset = pc.offset;
    out.stallReasonCount = pc.stalls.size();
    for (size_t r = 0; r < pc.stalls.size(); ++r) out.stallReason[r] = pc.stalls[r];
    batch.pcs.erase(batch.pcs.begin());
  }
  data->totalNumPcs = n;
  data->remainingNumPcs = batch.pcs.size();
  if (batch.pcs.empty()) {
    data->droppedSamples = batch.dropped;
    data->nonUsrKernelsTotalSamples = batch.non_user;
    g_fake->batches.pop_front();
  }
}

CUptiResult FakeGetData(CUpti_PCSamplingGetDataParams* p) {
  g_fake->calls.push_back("GetData");
  if (p->ctx == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  Fill(static_cast<CUpti_PCSamplingData*>(p->pcSamplingData));
  return CUPTI_SUCCESS;
}
CUptiResult FakeDisable(CUpti_PCSamplingDisableParams*) {
  g_fake->calls.push_back("Disable");
  // What was left goes to the configured buffer.
  g_fake->ready = true;
  if (g_fake->final_buffer != nullptr) Fill(g_fake->final_buffer);
  return CUPTI_SUCCESS;
}

// Cubins in these tests are the decimal text of their CRC.
CUptiResult FakeCubinCrc(CUpti_GetCubinCrcParams* p) {
  if (p->size != CUpti_GetCubinCrcParamsSize) return CUPTI_ERROR_INVALID_PARAMETER;
  p->cubinCrc = std::stoull(std::string(static_cast<const char*>(p->cubin), p->cubinSize));
  return CUPTI_SUCCESS;
}
// copy_kernel's cubin (9001) has line info: line 20 + offset / 0x20, in
// kernels.py; fma_kernel's (9002) has none.
int g_source_queries = 0;
CUptiResult FakeSassToSource(CUpti_GetSassToSourceCorrelationParams* p) {
  ++g_source_queries;
  const std::string cubin(static_cast<const char*>(p->cubin), p->cubinSize);
  if (cubin != "9001" || std::string(p->functionName) != "copy_kernel") {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  p->lineNumber = static_cast<uint32_t>(20 + p->pcOffset / 0x20);
  p->fileName = strdup("kernels.py");
  p->dirName = strdup("/home/user");
  return CUPTI_SUCCESS;
}

PcSamplingFunctions FakeFunctions() {
  PcSamplingFunctions f;
  f.get_num_stall_reasons = &FakeGetNum;
  f.get_stall_reasons = &FakeGetReasons;
  f.set_configuration = &FakeSetConfig;
  f.enable = &FakeEnable;
  f.disable = &FakeDisable;
  f.get_data = &FakeGetData;
  f.get_cubin_crc = &FakeCubinCrc;
  f.get_sass_to_source = &FakeSassToSource;
  return f;
}

class PcSamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake = &fake_;
    LoadFixture(fake_);
  }
  void TearDown() override { g_fake = nullptr; }

  // Launch contexts owned by the test: two Python lines.
  static constexpr gpu::ContextId kMemoryLine = 5;
  static constexpr gpu::ContextId kComputeLine = 6;
  void* const cuda_context_ = reinterpret_cast<void*>(0x1000);
  FakePcCupti fake_;
  SamplingSink sink_;
  PcSamplingFunctions functions_ = FakeFunctions();
};

TEST_F(PcSamplingTest, EnablesSerializedSamplingOnceAndDrainsAtLaunches) {
  PcSampling sampling(sink_, &functions_, PcSamplingOptions{}, "", nullptr);
  fake_.ready = false;  // nothing parsed yet at the first launch
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{
                             "Enable", "GetNumStallReasons", "GetStallReasons",
                             "SetConfigurationAttribute", "GetData"}));
  EXPECT_EQ(fake_.mode, CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED);
  EXPECT_EQ(fake_.selected_reasons, 9u);
  EXPECT_NE(fake_.final_buffer, nullptr);
  EXPECT_EQ(fake_.config.count(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD), 0u);
  fake_.ready = true;
  fake_.calls.clear();
  sampling.OnKernelLaunch(12, kComputeLine, "cuLaunchKernel", cuda_context_);
  sampling.OnKernelLaunch(13, kMemoryLine, "cuLaunchKernel", cuda_context_);
  // No second enable; each launch drains what is there.
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{"GetData", "GetData"}));
  fake_.calls.clear();
  sampling.Stop();
  EXPECT_EQ(fake_.calls.back(), "Disable");
  sampling.Stop();  // once only
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "Disable"), 1);
}

TEST_F(PcSamplingTest, AggregatesSamplesPerContextKernelAndInstruction) {
  PcSamplingOptions options;
  options.pcs_per_batch = 2;  // several GetData calls per batch
  PcSampling sampling(sink_, &functions_, options, "", nullptr);
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  sampling.OnKernelLaunch(12, kComputeLine, "cuLaunchKernel", cuda_context_);
  sampling.OnKernelLaunch(13, kMemoryLine, "cuLaunchKernel", cuda_context_);
  sampling.Drain();
  sampling.Stop();

  const gpu::ContextId load =
      sink_.Find(kMemoryLine, {"cuLaunchKernel", "copy_kernel", "pc 0x0080"});
  ASSERT_NE(load, 0u);
  EXPECT_EQ(sink_.NodeOf(load).kind, gpu::GpuNodeKind::kInstruction);
  // Launches 11 and 13 ran the same instruction from the same line: one
  // node. The _not_issued variants are subsets and are left out.
  EXPECT_EQ(sink_.Named(load, "gpu_stall_long_scoreboard"), 50);
  EXPECT_EQ(sink_.Named(load, "gpu_stall_selected"), 6);
  EXPECT_EQ(sink_.Named(load, "gpu_stall_wait"), 3);
  EXPECT_EQ(sink_.Named(load, "gpu_samples"), 59);
  EXPECT_FALSE(sink_.Registered("gpu_stall_long_scoreboard_not_issued"));
  const gpu::ContextId fma =
      sink_.Find(kComputeLine, {"cuLaunchKernel", "fma_kernel", "pc 0x0100"});
  ASSERT_NE(fma, 0u);
  EXPECT_EQ(sink_.Named(fma, "gpu_stall_math_pipe_throttle"), 30);
  EXPECT_EQ(sink_.Named(fma, "gpu_samples"), 72);
  EXPECT_EQ(sink_.Find(kComputeLine, {"cuLaunchKernel", "copy_kernel"}), 0u);
  EXPECT_NE(sink_.Description("gpu_stall_long_scoreboard").find("global/local memory"),
            std::string::npos);

  const PcSamplingStats stats = sampling.Stats();
  EXPECT_EQ(stats.instructions, 5u);
  EXPECT_EQ(stats.samples, 59u + 27 + 10 + 72 + 60);
  EXPECT_EQ(stats.unattributed_samples, 8u);  // launch 7 was never seen
  EXPECT_EQ(stats.dropped_samples, 5u);
  EXPECT_EQ(stats.non_user_samples, 12u);
  const auto metadata = sampling.Metadata();
  std::map<std::string, std::string> keys(metadata.begin(), metadata.end());
  EXPECT_EQ(keys["gpu_samples"], "on (kernel-serialized, every stall reason, 1 context)");
  EXPECT_EQ(keys["gpu_samples_unattributed"], "8");
  EXPECT_TRUE(keys["warning_gpu_samples"].starts_with("5 GPU instruction samples were dropped"));
}

TEST_F(PcSamplingTest, DataLeftAtStopComesFromTheConfiguredBuffer) {
  PcSampling sampling(sink_, &functions_, PcSamplingOptions{}, "", nullptr);
  fake_.ready = false;
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  fake_.calls.clear();
  sampling.Stop();  // GetData finds nothing parsed; Disable hands it over
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{"GetData", "Disable"}));
  const gpu::ContextId load =
      sink_.Find(kMemoryLine, {"cuLaunchKernel", "copy_kernel", "pc 0x00a0"});
  EXPECT_EQ(sink_.Named(load, "gpu_stall_long_scoreboard"), 25);
}

TEST_F(PcSamplingTest, FailedEnableSaysWhyAndSamplesNothing) {
  fake_.enable_result = CUPTI_ERROR_NOT_SUPPORTED;
  PcSampling sampling(sink_, &functions_, PcSamplingOptions{}, "",
                      [](int) { return std::string("CUPTI_ERROR_NOT_SUPPORTED"); });
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  sampling.OnKernelLaunch(12, kMemoryLine, "cuLaunchKernel", cuda_context_);
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "Enable"), 1);
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "GetData"), 0);
  std::map<std::string, std::string> keys;
  for (const auto& [key, value] : sampling.Metadata()) keys[key] = value;
  EXPECT_EQ(keys["gpu_samples"], "off: cuptiPCSamplingEnable failed: CUPTI_ERROR_NOT_SUPPORTED");
  EXPECT_EQ(keys["warning_gpu_samples"],
            "GPU instruction samples off: cuptiPCSamplingEnable failed: "
            "CUPTI_ERROR_NOT_SUPPORTED");
}

TEST_F(PcSamplingTest, BusyCountersSayWhoHoldsThem) {
  fake_.enable_result = CUPTI_ERROR_HARDWARE_BUSY;
  PcSampling sampling(sink_, &functions_, PcSamplingOptions{}, "",
                      [](int) { return std::string("CUPTI_ERROR_HARDWARE_BUSY"); });
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  std::map<std::string, std::string> keys;
  for (const auto& [key, value] : sampling.Metadata()) keys[key] = value;
  EXPECT_EQ(keys["gpu_samples"],
            "off: cuptiPCSamplingEnable failed: CUPTI_ERROR_HARDWARE_BUSY (another process or "
            "profiler is using this GPU's performance counters; run one fine-grained "
            "collection per GPU at a time)");
}

TEST_F(PcSamplingTest, MissingEntryPointsAreReported) {
  PcSampling sampling(sink_, nullptr, PcSamplingOptions{},
                      "off: libcupti has no cuptiPCSamplingEnable", nullptr);
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  EXPECT_TRUE(fake_.calls.empty());
  EXPECT_EQ(sampling.Metadata()[0].second, "off: libcupti has no cuptiPCSamplingEnable");
}

TEST_F(PcSamplingTest, InstructionsOfCubinsWithLineInfoGetTheirSourceLine) {
  PcSampling sampling(sink_, &functions_, PcSamplingOptions{}, "", nullptr);
  sampling.OnModuleLoaded("9001", 4);
  sampling.OnModuleLoaded("9002", 4);
  sampling.OnModuleLoaded("9001", 4);  // loaded again: kept once
  g_source_queries = 0;
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  sampling.OnKernelLaunch(12, kComputeLine, "cuLaunchKernel", cuda_context_);
  sampling.OnKernelLaunch(13, kMemoryLine, "cuLaunchKernel", cuda_context_);
  sampling.Stop();
  const gpu::ContextId load =
      sink_.Find(kMemoryLine, {"cuLaunchKernel", "copy_kernel", "pc 0x0080"});
  EXPECT_EQ(sink_.Location(load), "/home/user/kernels.py:24");
  EXPECT_EQ(sink_.Location(sink_.Find(kMemoryLine, {"cuLaunchKernel", "copy_kernel",
                                                    "pc 0x00f0"})),
            "/home/user/kernels.py:27");
  // No line info: the instruction has no location.
  EXPECT_EQ(sink_.Location(sink_.Find(kComputeLine, {"cuLaunchKernel", "fma_kernel",
                                                     "pc 0x0100"})),
            ":0");
  // One query per distinct instruction (launch 13 reuses 0x0080's node).
  EXPECT_EQ(g_source_queries, 5);
  std::map<std::string, std::string> keys;
  for (const auto& [key, value] : sampling.Metadata()) keys[key] = value;
  EXPECT_EQ(keys["gpu_samples_modules"], "2");
  EXPECT_EQ(keys["gpu_samples_instructions_with_line"], "3");
}

TEST_F(PcSamplingTest, CubinsOfSampledKernelsAreWrittenForTheirSass) {
  ScratchDir scratch;
  const std::string dir = scratch.path() + "/run.cubins";
  PcSampling sampling(sink_, &functions_, PcSamplingOptions{}, "", nullptr);
  sampling.SetCubinDirectory(dir);
  sampling.OnModuleLoaded("9001", 4);
  sampling.OnModuleLoaded("9002", 4);
  sampling.OnModuleLoaded("9003", 4);  // never sampled: not written
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  sampling.OnKernelLaunch(12, kComputeLine, "cuLaunchKernel", cuda_context_);
  sampling.Stop();
  std::map<std::string, std::string> keys;
  for (const auto& [key, value] : sampling.Metadata()) keys[key] = value;
  EXPECT_EQ(keys["gpu_samples_cubin_dir"], dir);
  // 9001 and 9002 in hex.
  EXPECT_EQ(keys["gpu_samples_cubins"], "0000000000002329 000000000000232a");
  std::ifstream cubin(dir + "/0000000000002329.cubin", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(cubin)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes, "9001");
  EXPECT_NE(access((dir + "/000000000000232a.cubin").c_str(), F_OK), -1);
  EXPECT_EQ(access((dir + "/000000000000232b.cubin").c_str(), F_OK), -1);
  // A second write (the profile written again) keeps the same files.
  for (const auto& [key, value] : sampling.Metadata()) keys[key] = value;
  EXPECT_EQ(keys["gpu_samples_cubins"], "0000000000002329 000000000000232a");
  EXPECT_EQ(keys.count("warning_gpu_samples_cubins"), 0u);
}

TEST(PcSamplingCubins, TheFolderFollowsTheProfilePathAndIsAbsolute) {
  unsetenv("DEEPCONTEXT_CUBIN_DIR");
  setenv("DEEPCONTEXT_OUTPUT", "/data/runs/train.dctx", 1);
  EXPECT_EQ(PcSampling::CubinDirectoryFromEnvironment(), "/data/runs/train.cubins");
  setenv("DEEPCONTEXT_OUTPUT", "train.dctx", 1);
  EXPECT_EQ(PcSampling::CubinDirectoryFromEnvironment(),
            std::filesystem::current_path().string() + "/train.cubins");
  setenv("DEEPCONTEXT_CUBIN_DIR", "/scratch/kept", 1);
  EXPECT_EQ(PcSampling::CubinDirectoryFromEnvironment(), "/scratch/kept");
  unsetenv("DEEPCONTEXT_CUBIN_DIR");
  unsetenv("DEEPCONTEXT_OUTPUT");
  EXPECT_EQ(PcSampling::CubinDirectoryFromEnvironment(), "");
}

TEST_F(PcSamplingTest, AnUnwritableCubinFolderIsAWarning) {
  PcSampling sampling(sink_, &functions_, PcSamplingOptions{}, "", nullptr);
  sampling.SetCubinDirectory("/proc/no/such/run.cubins");
  sampling.OnModuleLoaded("9001", 4);
  sampling.OnKernelLaunch(11, kMemoryLine, "cuLaunchKernel", cuda_context_);
  sampling.Stop();
  std::map<std::string, std::string> keys;
  for (const auto& [key, value] : sampling.Metadata()) keys[key] = value;
  EXPECT_EQ(keys.count("gpu_samples_cubins"), 0u);
  EXPECT_NE(keys["warning_gpu_samples_cubins"].find("/proc/no/such/run.cubins"),
            std::string::npos);
}

TEST(PcSamplingNames, StallReasonsBecomeMetricNames) {
  EXPECT_EQ(StallMetricName("smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
            "gpu_stall_long_scoreboard");
  EXPECT_EQ(StallMetricName("smsp__pcsamp_warps_issue_stalled_barrier_not_issued"), "");
  EXPECT_EQ(StallMetricName("Odd Name"), "gpu_stall_odd_name");
  EXPECT_NE(StallReasonMeaning("gpu_stall_math_pipe_throttle"), "");
  EXPECT_EQ(StallReasonMeaning("gpu_stall_unknown_thing"), "");
}

TEST(PcSamplingOptions, PeriodComesFromTheEnvironment) {
  std::string warning;
  setenv("DEEPCONTEXT_GPU_SAMPLE_PERIOD", "12", 1);
  EXPECT_EQ(PcSamplingOptionsFromEnvironment(&warning).period_log2, 12u);
  EXPECT_EQ(warning, "");
  setenv("DEEPCONTEXT_GPU_SAMPLE_PERIOD", "40", 1);
  EXPECT_EQ(PcSamplingOptionsFromEnvironment(&warning).period_log2, 0u);
  EXPECT_NE(warning.find("from 5 to 31"), std::string::npos);
  unsetenv("DEEPCONTEXT_GPU_SAMPLE_PERIOD");
}

}  // namespace
}  // namespace deepcontext::cupti
