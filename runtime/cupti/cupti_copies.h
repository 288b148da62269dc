// Which CUPTI libraries a process holds. A process can map two copies, e.g.
// the one torch links and the one Triton bundles for Proton; the driver
// lets one copy trace at a time, and the other's cuptiSubscribe then fails
// with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED without naming who
// holds it. Naming the other copy tells the user which tool that is.
#pragma once

#include <string>
#include <vector>

namespace deepcontext::cupti {

// The real paths of the CUPTI libraries (file names starting "libcupti.so")
// mapped into this process, each once.
std::vector<std::string> LoadedCuptiCopies();

// The real path of the shared object holding `address` (dladdr); "" when
// none does.
std::string LibraryHolding(const void* address);

// Of `loaded`, the copies other than `ours` (real paths, as above); none
// when `ours` is "" (unknown).
std::vector<std::string> OtherCuptiCopies(const std::vector<std::string>& loaded,
                                          const std::string& ours);

// What to add to "another CUPTI client is active" when `others` are loaded
// beside the copy DeepContext uses; "" when there are none.
std::string OtherCopiesNote(const std::vector<std::string>& others);

}  // namespace deepcontext::cupti
