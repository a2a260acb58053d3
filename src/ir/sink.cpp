#include "ir/sink.h"

#include <algorithm>

namespace onnxfold {

void Sink::writeBuffer(const Buffer& b) {
  // Chunked so a sink can report progress and never sees > 2 GB at once.
  constexpr size_t kChunk = size_t{64} << 20;
  if (b.isResident()) {
    for (size_t off = 0; off < b.size(); off += kChunk)
      write(b.data() + off, std::min(kChunk, b.size() - off));
    return;
  }
  constexpr size_t kReadChunk = size_t{4} << 20;
  uint8_t* p = nullptr;
  const Buffer scratch = Buffer::allocateUninitialized(std::min(kReadChunk, b.size()), &p);
  for (size_t off = 0; off < b.size(); off += kReadChunk) {
    const size_t n = std::min(kReadChunk, b.size() - off);
    b.copyTo(off, n, p);
    write(p, n);
  }
}

}  // namespace onnxfold
