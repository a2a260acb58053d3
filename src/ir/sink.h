// Sink: where encoded bytes go (a file, a string, a JS callback), in chunks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace onnxfold {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const uint8_t* data, size_t size) = 0;
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
