// Fnv1a: the one cheap, deterministic 64-bit hash onnxfold uses for content and
// identity hashes (the same value in every build, native and wasm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace onnxfold {

struct Fnv1a {
  uint64_t h = 1469598103934665603ull;
  static constexpr uint64_t kPrime = 1099511628211ull;

  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i)
      h = (h ^ b[i]) * kPrime;
  }
  // Whole 8-byte words (one multiply per word instead of per byte), then the tail bytes.
  void words(const uint8_t* p, size_t n) {
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * kPrime;
      h ^= h >> 29;
    }
    bytes(p, n);
  }
  template <class T>
  void pod(const T& v) {
    bytes(&v, sizeof v);
  }
  // The length as 64 bits, so wasm32 and native hash alike.
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    bytes(s.data(), s.size());
  }
};

}  // namespace onnxfold
