// Source: bytes the optimizer can read on demand without holding them.
//
// A weight in an external-data file (or, natively, anywhere in a file) is a range
// of a Source: the graph keeps (source, offset, length) and reads bytes only when
// a pass needs the values. The host implements reads: pread natively,
// fs.readSync / FileReaderSync in JS. A Source the host can name (hostId() >= 0)
// lets the writer emit "copy this range" instead of the bytes, so unchanged
// weights never pass through the wasm heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace onnxfold {

class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Fills dst with [offset, offset + n); throws Error when that is not possible.
  // Precondition: offset + n <= size().
  virtual void read(uint64_t offset, size_t n, uint8_t* dst) const = 0;
  // An id the host knows this source by (for output plans), or -1.
  virtual int hostId() const { return -1; }
  // For messages: "external data 'model.onnx.data'".
  virtual std::string describe() const = 0;
  // For an external-data file of the input: its location as the model names it ("" else).
  virtual std::string location() const { return ""; }
  // For a source that computes its bytes: a hash equal for sources that compute the same
  // bytes the same way (lets pool-constants pair them without computing them).
  virtual std::optional<uint64_t> identity() const { return std::nullopt; }
};

// Statistics of the storage Buffers allocate, for reports and memory limits.
struct MemoryStats {
  uint64_t live = 0;   // bytes held now
  uint64_t peak = 0;   // most held at once since the last reset
  uint64_t read = 0;   // bytes read from sources
  double read_ms = 0;  // time spent reading them (computing them, for computed sources)
};

}  // namespace onnxfold
