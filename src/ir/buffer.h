// Buffer: an immutable byte range that keeps its backing storage alive.
//
// A weight read from a model is a Buffer pointing into the model's bytes, or a
// range of a Source (an external-data file the host reads on demand): then no
// byte is in memory until data() is first called, and the writer copies the
// range from the source without reading it at all. It is never copied unless a
// pass writes a new value. Owned storage is 64-byte aligned so kernels can use
// it directly, and counted (MemoryStats), so a run can report and cap its peak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "ir/source.h"

namespace onnxfold {

class Buffer {
 public:
  Buffer() = default;
  // A view of [data, data+size) kept alive by `owner` (may be null for static data).
  Buffer(const uint8_t* data, size_t size, std::shared_ptr<const void> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}
  // Bytes [offset, offset + size) of `source`, read on the first data() call; copies of
  // the Buffer share that one read. Precondition: the range lies inside the source.
  static Buffer fromSource(std::shared_ptr<const Source> source, uint64_t offset, size_t size);

  // Zero-initialised, 64-byte-aligned owned storage. `out` receives the writable pointer.
  static Buffer allocate(size_t size, uint8_t** out);
  // The same without zeroing, for callers that write every byte: zeroing first touches
  // every page twice, which dominated folding large weights.
  static Buffer allocateUninitialized(size_t size, uint8_t** out);
  static Buffer copyOf(const void* data, size_t size);

  // The bytes; a source range is read into memory first (and stays there while any copy
  // of this Buffer lives, or until release()).
  const uint8_t* data() const { return data_ != nullptr || !range_ ? data_ : residentData(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data()), size_}; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

  // A source range (its bytes may or may not have been read yet).
  bool isSourceRange() const { return range_ != nullptr; }
  // The bytes are in memory now (always true for views and owned storage).
  bool isResident() const;
  // For a source range: its source and the offset of byte 0 in it (else null / 0).
  const std::shared_ptr<const Source>& source() const;
  uint64_t sourceOffset() const;
  // Copies [offset, offset + n) of this buffer to dst without making it resident.
  void copyTo(uint64_t offset, size_t n, uint8_t* dst) const;
  // Forgets the bytes read from a source range, for every copy of this Buffer (they
  // share them); they are read again when next needed. No effect on other Buffers.
  void release() const;

  // A sub-range sharing the same owner or source. Precondition: offset + size <= size().
  Buffer slice(size_t offset, size_t size) const;

  bool isAligned(size_t alignment) const {
    return reinterpret_cast<uintptr_t>(data()) % alignment == 0;
  }

  // Storage allocated by Buffers (allocate*, copyOf, source reads), process-wide.
  static MemoryStats memoryStats();
  static void resetPeakMemory();
  // Allocations that would take the live total over `bytes` throw ResourceError (0: no limit).
  // In wasm the limit is on the whole heap, checked at each allocation.
  static void setMemoryLimit(uint64_t bytes);
  // The limit for one run (a facade call), lifted when it ends however it ends.
  struct ScopedMemoryLimit {
    explicit ScopedMemoryLimit(uint64_t bytes) { setMemoryLimit(bytes); }
    ~ScopedMemoryLimit() { setMemoryLimit(0); }
    ScopedMemoryLimit(const ScopedMemoryLimit&) = delete;
    ScopedMemoryLimit& operator=(const ScopedMemoryLimit&) = delete;
  };
  // The wasm heap's size (it only grows: its peak); natively the live total above.
  static uint64_t heapBytes();

 private:
  struct Range;
  const uint8_t* residentData() const;

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<const void> owner_;
  std::shared_ptr<Range> range_;
};

// Bytes already in memory as a Source: its ranges are plain views (no copy, no read).
class MemorySource : public Source {
 public:
  explicit MemorySource(Buffer bytes, std::string name = "memory")
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override;
  std::string describe() const override { return name_; }
  const Buffer& bytes() const { return bytes_; }

 private:
  Buffer bytes_;
  std::string name_;
};

// [offset, offset + size) of `source` as a Buffer: a view for a MemorySource, else a range
// read on demand. Offsets are 64-bit: a file may be larger than the address space (wasm32).
Buffer rangeOf(const std::shared_ptr<const Source>& source, uint64_t offset, size_t size);

}  // namespace onnxfold
