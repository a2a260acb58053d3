// What the fuzz targets share: the input as an exactly-sized buffer and as a streamed file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "ir/buffer.h"
#include "ir/source.h"

namespace onnxfold::fuzz {

// The bytes in an allocation of exactly their size, so that reading past the end is a heap
// overflow AddressSanitizer reports.
inline Buffer exactCopy(const uint8_t* data, size_t size) {
  std::shared_ptr<uint8_t> owner(new uint8_t[size + (size == 0)], std::default_delete<uint8_t[]>());
  if (size != 0) std::memcpy(owner.get(), data, size);
  return Buffer(owner.get(), size, owner);
}

// The bytes as a file read on demand (weights stay ranges of it, as for the CLI's mapped files
// and the page's Blobs), not a view. Reading outside it is a finding.
class BytesSource : public Source {
 public:
  explicit BytesSource(Buffer b) : b_(std::move(b)) {}
  uint64_t size() const override { return b_.size(); }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    if (offset > b_.size() || n > b_.size() - offset) {
      std::fprintf(stderr, "fuzz: read past the source (%llu + %zu of %zu bytes)\n",
                   static_cast<unsigned long long>(offset), n, b_.size());
      std::abort();
    }
    b_.copyTo(offset, n, dst);
  }
  std::string describe() const override { return "fuzz input"; }

 private:
  Buffer b_;
};

}  // namespace onnxfold::fuzz
