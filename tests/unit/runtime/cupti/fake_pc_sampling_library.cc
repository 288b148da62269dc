// Stands in for libcupti's PC sampling entry points in the backend tests:
// a shared library that the backend finds already loaded (dlopen
// RTLD_NOLOAD + dlsym, as with the real one). Its records and call log are
// reached through the fake_pc_* functions.
#include <cupti_pcsampling.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

struct Record {
  uint32_t correlation;
  uint64_t offset;
  uint32_t samples;  // of stall reason 0
  std::string function = "sampled_kernel";
};

std::string g_calls;
std::vector<Record> g_records;
CUcontext g_context = nullptr;

void Log(const char* call) {
  if (!g_calls.empty()) g_calls += ",";
  g_calls += call;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* fake_pc_calls() { return g_calls.c_str(); }
__attribute__((visibility("default"))) void* fake_pc_context() { return g_context; }
__attribute__((visibility("default"))) void fake_pc_reset() {
  g_calls.clear();
  g_records.clear();
  g_context = nullptr;
}
__attribute__((visibility("default"))) void fake_pc_add_record(uint32_t correlation,
                                                               uint64_t offset,
                                                               uint32_t samples) {
  g_records.push_back({correlation, offset, samples});
}
// A record of the kernel `function` (as CUPTI names it, mangled).
__attribute__((visibility("default"))) void fake_pc_add_kernel_record(uint32_t correlation,
                                                                      uint64_t offset,
                                                                      uint32_t samples,
                                                                      const char* function) {
  g_records.push_back({correlation, offset, samples, function});
}

__attribute__((visibility("default"))) CUptiResult cuptiPCSamplingEnable(
    CUpti_PCSamplingEnableParams* p) {
  Log("Enable");
  g_context = p->ctx;
  return CUPTI_SUCCESS;
}
__attribute__((visibility("default"))) CUptiResult cuptiPCSamplingDisable(
    CUpti_PCSamplingDisableParams*) {
  Log("Disable");
  return CUPTI_SUCCESS;
}
__attribute__((visibility("default"))) CUptiResult cuptiPCSamplingGetNumStallReasons(
    CUpti_PCSamplingGetNumStallReasonsParams* p) {
  Log("GetNumStallReasons");
  *p->numStallReasons = 1;
  return CUPTI_SUCCESS;
}
__attribute__((visibility("default"))) CUptiResult cuptiPCSamplingGetStallReasons(
    CUpti_PCSamplingGetStallReasonsParams* p) {
  Log("GetStallReasons");
  p->stallReasonIndex[0] = 3;
  std::strcpy(p->stallReasons[0], "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  return CUPTI_SUCCESS;
}
__attribute__((visibility("default"))) CUptiResult cuptiPCSamplingSetConfigurationAttribute(
    CUpti_PCSamplingConfigurationInfoParams*) {
  Log("SetConfigurationAttribute");
  return CUPTI_SUCCESS;
}
__attribute__((visibility("default"))) CUptiResult cuptiPCSamplingGetData(
    CUpti_PCSamplingGetDataParams* p) {
  Log("GetData");
  auto* data = static_cast<CUpti_PCSamplingData*>(p->pcSamplingData);
  size_t n = 0;
  for (; n < g_records.size() && n < data->collectNumPcs; ++n) {
    CUpti_PCSamplingPCData& pc = data->pPcData[n];
    pc.correlationId = g_records[n].correlation;
    pc.pcOffset = g_records[n].offset;
    pc.cubinCrc = 77;
    pc.functionName = strdup(g_records[n].function.c_str());
    pc.stallReasonCount = 1;
    pc.stallReason[0] = {3, g_records[n].samples};
  }
  g_records.erase(g_records.begin(), g_records.begin() + static_cast<long>(n));
  data->totalNumPcs = n;
  data->remainingNumPcs = g_records.size();
  return CUPTI_SUCCESS;
}
__attribute__((visibility("default"))) CUptiResult cuptiGetCubinCrc(CUpti_GetCubinCrcParams* p) {
  Log("GetCubinCrc");
  p->cubinCrc = 77;
  return CUPTI_SUCCESS;
}
__attribute__((visibility("default"))) CUptiResult cuptiGetSassToSourceCorrelation(
    CUpti_GetSassToSourceCorrelationParams* p) {
  p->lineNumber = static_cast<uint32_t>(p->pcOffset / 16);
  p->fileName = strdup("kernel.py");
  p->dirName = strdup("/src");
  return CUPTI_SUCCESS;
}

}  // extern "C"
