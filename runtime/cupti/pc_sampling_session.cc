#include "runtime/cupti/pc_sampling_session.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "runtime/cupti/cupti_failure_text.h"
#include "runtime/cupti/pc_sampling_functions.h"

namespace deepcontext::cupti {

// One CUDA context's sampling state and buffers.
struct PcSamplingSession::Context {
  // A PC-record buffer: CUPTI fills `data.pPcData`, each record's stall
  // reasons in its slice of `stalls`.
  struct Buffer {
    CUpti_PCSamplingData data{};
    std::vector<CUpti_PCSamplingPCData> pcs;
    std::vector<CUpti_PCSamplingStallReason> stalls;

    void Allocate(size_t pc_count, size_t reason_count) {
      pcs.assign(pc_count, CUpti_PCSamplingPCData{});
      stalls.assign(pc_count * reason_count, CUpti_PCSamplingStallReason{});
      for (size_t i = 0; i < pc_count; ++i) {
        pcs[i].size = sizeof(CUpti_PCSamplingPCData);
        pcs[i].stallReason = stalls.data() + i * reason_count;
      }
      data = CUpti_PCSamplingData{};
      data.size = sizeof(CUpti_PCSamplingData);
      data.collectNumPcs = pc_count;
      data.pPcData = pcs.data();
    }
  };

  // Where a context's sampling stands: CUPTI refused to enable it, or it
  // samples until Stop() disables it.
  enum class State { kRefused, kSampling, kDisabled };

  CUcontext ctx = nullptr;
  State state = State::kRefused;
  std::unique_ptr<gpu::CounterClaim> claim;  // held while sampling
  size_t reason_count = 0;
  Buffer fetched;  // for cuptiPCSamplingGetData
  Buffer final;    // configured: cuptiPCSamplingDisable's last data
  std::vector<StallSamples> stalls;  // scratch
};

namespace {

// CUPTI allocates each record's function name and leaves freeing it to
// the client; the same pointer repeats across records of a function.
std::set<char*>& FunctionNames() {
  static auto* names = new std::set<char*>();
  return *names;
}

}  // namespace

Status ResolvePcSamplingFunctions(const std::string& library_path,
                                  PcSamplingFunctions* functions) {
  void* handle = dlopen(library_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return Status::Error("libcupti is not loaded");
  Status status;
  auto resolve = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(handle, name));
    if (slot == nullptr && status.ok()) {
      status = Status::Error(std::string("libcupti has no ") + name);
    }
  };
  resolve(functions->get_num_stall_reasons, "cuptiPCSamplingGetNumStallReasons");
  resolve(functions->get_stall_reasons, "cuptiPCSamplingGetStallReasons");
  resolve(functions->set_configuration, "cuptiPCSamplingSetConfigurationAttribute");
  resolve(functions->enable, "cuptiPCSamplingEnable");
  resolve(functions->disable, "cuptiPCSamplingDisable");
  resolve(functions->get_data, "cuptiPCSamplingGetData");
  // Optional: without them instructions have no source line.
  functions->get_cubin_crc = reinterpret_cast<decltype(functions->get_cubin_crc)>(
      dlsym(handle, "cuptiGetCubinCrc"));
  functions->get_sass_to_source = reinterpret_cast<decltype(functions->get_sass_to_source)>(
      dlsym(handle, "cuptiGetSassToSourceCorrelation"));
  dlclose(handle);  // the loader's own reference keeps it loaded
  return status;
}

PcSamplingOptions PcSamplingOptionsFromEnvironment(std::string* warning) {
  PcSamplingOptions options;
  const char* text = std::getenv("DEEPCONTEXT_GPU_SAMPLE_PERIOD");
  if (text == nullptr || text[0] == '\0') return options;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno == 0 && end != text && *end == '\0' && value >= 5 && value <= 31) {
    options.period_log2 = static_cast<uint32_t>(value);
  } else {
    *warning = std::string("DEEPCONTEXT_GPU_SAMPLE_PERIOD=") + text +
               " is not a whole number from 5 to 31 (log2 of the cycles between "
               "samples); CUPTI's default period is used";
  }
  return options;
}

PcSamplingSession::PcSamplingSession(const PcSamplingFunctions& functions,
                                     PcSampleAggregator& aggregator,
                                     PcSamplingOptions options,
                                     std::function<std::string(int)> result_text)
    : f_(functions),
      aggregator_(aggregator),
      options_(options),
      result_text_(std::move(result_text)) {}

PcSamplingSession::~PcSamplingSession() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!stopped_) return;  // CUPTI may still hand these names out
  for (char* name : FunctionNames()) std::free(name);
  FunctionNames().clear();
}

std::string PcSamplingSession::Describe(const char* call, int result) const {
  return DescribeCuptiFailure(call, result, result_text_);
}

bool PcSamplingSession::EnableLocked(void* cuda_context, Context& context) {
  auto* ctx = static_cast<CUcontext>(cuda_context);
  auto claim = claims_.Claim(cuda_context);
  if (!claim.ok()) {
    last_error_ = claim.status().message();
    return false;
  }
  context.claim = std::move(*claim);
  CUpti_PCSamplingEnableParams enable{};
  enable.size = CUpti_PCSamplingEnableParamsSize;
  enable.ctx = ctx;
  if (const CUptiResult result = f_.enable(&enable); result != CUPTI_SUCCESS) {
    last_error_ = Describe("cuptiPCSamplingEnable", result);
    context.claim.reset();
    return false;
  }
  size_t count = 0;
  CUpti_PCSamplingGetNumStallReasonsParams number{};
  number.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  number.ctx = ctx;
  number.numStallReasons = &count;
  // Enabled from here on: a failure below disables sampling again.
  auto fail = [&](const char* call, CUptiResult result) {
    last_error_ = Describe(call, result);
    CUpti_PCSamplingDisableParams disable{};
    disable.size = CUpti_PCSamplingDisableParamsSize;
    disable.ctx = ctx;
    f_.disable(&disable);
    context.claim.reset();
    return false;
  };
  CUptiResult result = f_.get_num_stall_reasons(&number);
  if (result != CUPTI_SUCCESS || count == 0) {
    return fail("cuptiPCSamplingGetNumStallReasons", result);
  }
  std::vector<uint32_t> indexes(count);
  std::vector<std::vector<char>> names(count, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
  std::vector<char*> name_pointers(count);
  for (size_t i = 0; i < count; ++i) name_pointers[i] = names[i].data();
  CUpti_PCSamplingGetStallReasonsParams reasons{};
  reasons.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  reasons.ctx = ctx;
  reasons.numStallReasons = count;
  reasons.stallReasonIndex = indexes.data();
  reasons.stallReasons = name_pointers.data();
  if (result = f_.get_stall_reasons(&reasons); result != CUPTI_SUCCESS) {
    return fail("cuptiPCSamplingGetStallReasons", result);
  }
  std::vector<std::pair<uint32_t, std::string>> named;
  for (size_t i = 0; i < count; ++i) {
    named.emplace_back(indexes[i],
                       std::string(names[i].data(), strnlen(names[i].data(), names[i].size())));
  }
  aggregator_.SetStallReasons(named);

  context.reason_count = count;
  context.fetched.Allocate(options_.pcs_per_batch, count);
  context.final.Allocate(options_.pcs_per_batch, count);
  std::vector<CUpti_PCSamplingConfigurationInfo> config;
  auto add = [&config](CUpti_PCSamplingConfigurationAttributeType type) -> auto& {
    config.emplace_back();
    config.back().attributeType = type;
    return config.back().attributeData;
  };
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE)
      .collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
  auto& stall = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON).stallReasonData;
  stall.stallReasonCount = count;
  stall.pStallReasonIndex = indexes.data();
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT)
      .outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
      .samplingDataBufferData.samplingDataBuffer = &context.final.data;
  if (options_.period_log2 != 0) {
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
        .samplingPeriodData.samplingPeriod = options_.period_log2;
  }
  CUpti_PCSamplingConfigurationInfoParams params{};
  params.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  params.ctx = ctx;
  params.numAttributes = config.size();
  params.pPCSamplingConfigurationInfo = config.data();
  if (result = f_.set_configuration(&params); result != CUPTI_SUCCESS) {
    return fail("cuptiPCSamplingSetConfigurationAttribute", result);
  }
  return true;
}

namespace {

void Deliver(CUpti_PCSamplingData& data, PcSampleAggregator& aggregator,
             std::vector<StallSamples>& stalls) {
  for (size_t i = 0; i < data.totalNumPcs && i < data.collectNumPcs; ++i) {
    const CUpti_PCSamplingPCData& pc = data.pPcData[i];
    stalls.clear();
    for (size_t r = 0; r < pc.stallReasonCount; ++r) {
      stalls.push_back({pc.stallReason[r].pcSamplingStallReasonIndex,
                        pc.stallReason[r].samples});
    }
    if (pc.functionName != nullptr) FunctionNames().insert(pc.functionName);
    PcRecord record;
    record.correlation_id = pc.correlationId;
    record.function_name = pc.functionName != nullptr ? pc.functionName : "<kernel>";
    record.cubin_crc = pc.cubinCrc;
    record.pc_offset = pc.pcOffset;
    record.stalls = stalls;
    aggregator.OnPc(record);
  }
  aggregator.OnBatch(data.droppedSamples, data.nonUsrKernelsTotalSamples,
                     data.hardwareBufferFull != 0);
  data.totalNumPcs = 0;
  data.droppedSamples = 0;
  data.nonUsrKernelsTotalSamples = 0;
  data.hardwareBufferFull = 0;
}

}  // namespace

void PcSamplingSession::DrainLocked(Context& context) {
  // A bounded number of batches per call: CUPTI says how many remain.
  for (int batch = 0; batch < 1024; ++batch) {
    CUpti_PCSamplingGetDataParams params{};
    params.size = CUpti_PCSamplingGetDataParamsSize;
    params.ctx = context.ctx;
    params.pcSamplingData = &context.fetched.data;
    const CUptiResult result = f_.get_data(&params);
    // OUT_OF_MEMORY: the hardware buffer filled up; what was parsed still
    // comes back.
    if (result != CUPTI_SUCCESS && result != CUPTI_ERROR_OUT_OF_MEMORY) {
      last_error_ = Describe("cuptiPCSamplingGetData", result);
      return;
    }
    const size_t got = context.fetched.data.totalNumPcs;
    const size_t remaining = context.fetched.data.remainingNumPcs;
    Deliver(context.fetched.data, aggregator_, context.stalls);
    if (got == 0 || remaining == 0) return;
  }
}

void PcSamplingSession::OnKernelLaunch(void* cuda_context) {
  if (cuda_context == nullptr) return;
  std::lock_guard<std::mutex> guard(mutex_);
  if (stopped_) return;
  auto& slot = contexts_[cuda_context];
  if (slot == nullptr) {
    slot = std::make_unique<Context>();
    slot->ctx = static_cast<CUcontext>(cuda_context);
    slot->state = EnableLocked(cuda_context, *slot) ? Context::State::kSampling
                                                    : Context::State::kRefused;
  }
  if (slot->state == Context::State::kSampling) DrainLocked(*slot);
}

void PcSamplingSession::Drain() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (stopped_) return;
  for (auto& [cuda_context, context] : contexts_) {
    if (context->state == Context::State::kSampling) DrainLocked(*context);
  }
}

void PcSamplingSession::Stop() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (stopped_) return;
  stopped_ = true;
  for (auto& [cuda_context, context] : contexts_) {
    if (context->state != Context::State::kSampling) continue;
    DrainLocked(*context);
    CUpti_PCSamplingDisableParams disable{};
    disable.size = CUpti_PCSamplingDisableParamsSize;
    disable.ctx = static_cast<CUcontext>(cuda_context);
    if (const CUptiResult result = f_.disable(&disable); result != CUPTI_SUCCESS) {
      last_error_ = Describe("cuptiPCSamplingDisable", result);
    }
    // Disable flushed the rest into the configured buffer.
    Deliver(context->final.data, aggregator_, context->stalls);
    context->state = Context::State::kDisabled;
    context->claim.reset();
  }
}

std::string PcSamplingSession::Status() const {
  std::lock_guard<std::mutex> guard(mutex_);
  size_t enabled = 0, failed = 0;
  for (const auto& [cuda_context, context] : contexts_) {
    if (context->state == Context::State::kRefused) {
      ++failed;
    } else {
      ++enabled;
    }
  }
  if (enabled == 0 && failed > 0) return "off: " + last_error_;
  std::string text = "on (kernel-serialized, every stall reason";
  if (options_.period_log2 != 0) {
    text += ", every 2^" + std::to_string(options_.period_log2) + " cycles";
  }
  text += ", " + std::to_string(enabled) + " context" + (enabled == 1 ? "" : "s");
  if (failed > 0) text += "; " + std::to_string(failed) + " failed: " + last_error_;
  return text + claims_.StatusNote() + ")";
}

}  // namespace deepcontext::cupti
