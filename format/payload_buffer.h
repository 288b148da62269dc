// Memory for a decompressed payload whose consumed prefix is handed back to
// the system while the payload is decoded, so that reading a large profile
// never holds the whole payload and the whole decoded profile at once.
// Internal to format/.
#pragma once

#include <cstddef>
#include <string_view>

namespace deepcontext::format {

class PayloadBuffer {
 public:
  PayloadBuffer() = default;
  ~PayloadBuffer();
  PayloadBuffer(const PayloadBuffer&) = delete;
  PayloadBuffer& operator=(const PayloadBuffer&) = delete;

  // Replaces the buffer by size zero bytes. Returns false when the system
  // has no memory for them. Never throws.
  bool Allocate(size_t size);

  char* data() { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

  // Returns the whole pages below offset to the system; the bytes there
  // read as zero afterwards, so only a decoder that is done with them may
  // call this. Never throws.
  void ReleaseBefore(size_t offset);

 private:
  void Free();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t released_ = 0;  // bytes from data_ already returned
};

}  // namespace deepcontext::format
