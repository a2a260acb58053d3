// Sink: where encoded bytes go (a file, a string, a JS callback), in chunks.
//
// Tensor bytes arrive as Buffers (writeBuffer): a sink that can copy a range of a
// source itself (copy_file_range natively, a Blob slice or a streamed file copy
// in JS) does so, and the bytes never pass through memory here; other sinks get
// them read through a bounded chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/buffer.h"

namespace onnxfold {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const uint8_t* data, size_t size) = 0;
  // The bytes of `b`; by default written from memory, or read from its source in
  // chunks (so a large weight is never resident just to be written).
  virtual void writeBuffer(const Buffer& b);
  // The total number of bytes about to be written (a hint; may be ignored).
  virtual void reserve(uint64_t total) { (void)total; }
};

class StringSink : public Sink {
 public:
  void write(const uint8_t* data, size_t size) override {
    out.append(reinterpret_cast<const char*>(data), size);
  }
  // Growing by doubling would touch (and in wasm, fault in) about twice the memory.
  void reserve(uint64_t total) override { out.reserve(out.size() + static_cast<size_t>(total)); }
  std::string out;
};

}  // namespace onnxfold
