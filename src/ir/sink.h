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
};

class StringSink : public Sink {
 public:
  void write(const uint8_t* data, size_t size) override {
    out.append(reinterpret_cast<const char*>(data), size);
  }
  std::string out;
};

}  // namespace onnxfold
