#include "format/payload_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

namespace deepcontext::format {
namespace {

// An empty payload still needs a valid address for zlib and string_view.
char empty_payload[1];

}  // namespace

PayloadBuffer::~PayloadBuffer() { Free(); }

void PayloadBuffer::Free() {
  if (data_ != nullptr && data_ != empty_payload) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
  released_ = 0;
}

bool PayloadBuffer::Allocate(size_t size) {
  Free();
  if (size == 0) {
    data_ = empty_payload;
    return true;
  }
  // An anonymous mapping of its own, so its pages can be given back one by
  // one (MADV_DONTNEED) without involving the allocator.
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return false;
  data_ = static_cast<char*>(memory);
  size_ = size;
  return true;
}

void PayloadBuffer::ReleaseBefore(size_t offset) {
  if (data_ == nullptr || data_ == empty_payload) return;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (offset > size_) offset = size_;
  const size_t end = offset / page * page;
  if (end <= released_) return;
  madvise(data_ + released_, end - released_, MADV_DONTNEED);
  released_ = end;
}

}  // namespace deepcontext::format
