// Buffer: an immutable byte range that keeps its backing storage alive.
//
// A weight read from a model is a Buffer pointing into the model's bytes (or a
// memory-mapped external-data file); it is never copied unless a pass writes a
// new value. Owned storage is 64-byte aligned so kernels can use it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace onnxfold {

class Buffer {
 public:
  Buffer() = default;
  // A view of [data, data+size) kept alive by `owner` (may be null for static data).
  Buffer(const uint8_t* data, size_t size, std::shared_ptr<const void> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}

  // Zero-initialised, 64-byte-aligned owned storage. `out` receives the writable pointer.
  static Buffer allocate(size_t size, uint8_t** out);
  // The same without zeroing, for callers that write every byte: zeroing first touches
  // every page twice, which dominated folding large weights.
  static Buffer allocateUninitialized(size_t size, uint8_t** out);
  static Buffer copyOf(const void* data, size_t size);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

  // A sub-range sharing the same owner. Precondition: offset + size <= this->size().
  Buffer slice(size_t offset, size_t size) const { return Buffer(data_ + offset, size, owner_); }

  bool isAligned(size_t alignment) const {
    return reinterpret_cast<uintptr_t>(data_) % alignment == 0;
  }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

}  // namespace onnxfold
