// Tensor: a constant value (initializer, Constant attribute, folded result).
//
// Numeric data is held as raw little-endian element bytes in a Buffer, which is
// a zero-copy view of the model file (or of a mapped external-data file) until
// a pass replaces it. Typed proto fields (float_data, int64_data, ...) are
// decoded to raw bytes by the reader, so there is one representation to handle.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/buffer.h"
#include "ir/dtype.h"

namespace onnxfold {

using StringPair = std::pair<std::string, std::string>;
using StringPairs = std::vector<StringPair>;

// Where a tensor's bytes were stored outside the model file (ExternalData.md).
struct ExternalDataRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: not given (to the end of the file)
  std::string checksum;
  StringPairs other;  // keys we do not interpret, kept in order
};

class Tensor {
 public:
  // What the evaluator computes is a tensor, or for sequence and optional types a sequence
  // of tensors or an empty optional (an optional holding a value is that value). Only
  // plain tensors are initializers; the others live while a model is folded.
  enum class Kind : uint8_t { kPlain, kSequence, kNone };

  Tensor() = default;
  // Allocates zeroed storage for the given shape (or empty strings for STRING).
  Tensor(DataType dtype, std::vector<int64_t> dims);
  // Storage for the given shape that the caller fills completely (not STRING).
  static Tensor uninitialized(DataType dtype, std::vector<int64_t> dims);
  // Wraps existing raw bytes. Precondition: bytes.size() == rawByteSize(dtype, numElements).
  Tensor(DataType dtype, std::vector<int64_t> dims, Buffer bytes);

  // A sequence of `elements`, each of dtype `elem` (kept for an empty sequence).
  static Tensor sequence(DataType elem, std::vector<Tensor> elements);
  // An optional without a value.
  static Tensor none();
  Kind kind() const { return kind_; }
  bool isPlain() const { return kind_ == Kind::kPlain; }
  // Precondition: kind() == kSequence.
  const std::vector<Tensor>& elements() const { return *elements_; }

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t numElements() const;

  // Raw element bytes (empty for STRING tensors and unloaded external data). The
  // buffer may be a source range: bytes() reads it into memory; buffer().copyTo()
  // reads a part without keeping it.
  const Buffer& buffer() const { return buffer_; }
  const uint8_t* bytes() const { return buffer_.data(); }
  size_t byteSize() const { return buffer_.size(); }
  // Bytes the tensor takes in a written model: byteSize(), or for STRING tensors the
  // strings and their length prefixes (byteSize() is 0 for them).
  uint64_t storedBytes() const;
  // Writable bytes; copies first if the storage is shared or a view of the input.
  uint8_t* mutableBytes();

  // Reads element i as T with memcpy (views into protobuf bytes may be unaligned).
  template <class T>
  T at(size_t i) const {
    T v;
    std::memcpy(&v, buffer_.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  // The data as an aligned T array: the view itself when aligned, else an aligned copy.
  Tensor aligned() const;

  const std::vector<std::string>& strings() const { return strings_; }
  std::vector<std::string>& mutableStrings() {
    hash_valid_ = false;
    return strings_;
  }

  // Replaces the bytes, keeping dtype and dims. Precondition: sizes match.
  void setBuffer(Buffer b) {
    buffer_ = std::move(b);
    hash_valid_ = false;
  }
  void reshape(std::vector<int64_t> dims) {
    dims_ = std::move(dims);
    hash_valid_ = false;
  }

  // True when the bytes are present (false only for external data that was not resolved).
  bool isLoaded() const;

  // Proto fields kept for round trips.
  std::string name;
  std::string doc_string;
  StringPairs metadata_props;
  std::optional<std::pair<int64_t, int64_t>> segment;  // TensorProto.Segment (begin, end)
  std::optional<ExternalDataRef> external;             // set when read from external data
  std::string unknown_fields;                          // encoded fields we do not know

  // Same dtype, dims and content (names and metadata are not compared).
  bool sameContent(const Tensor& other) const;
  // Hash of dtype, dims and content (reads every byte, cached).
  uint64_t contentHash() const;
  // Hash of dtype, dims and 16 spread samples of the bytes (contentHash for small
  // tensors): equal contents give equal hashes, and reading it costs 1 KiB, not the
  // whole weight. Candidates it pairs are compared with sameContent(). Bytes a source
  // computes (identity()) are hashed by that identity instead of being computed.
  uint64_t sampleHash() const;

 private:
  Kind kind_ = Kind::kPlain;
  std::shared_ptr<const std::vector<Tensor>> elements_;  // kSequence
  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  Buffer buffer_;
  std::vector<std::string> strings_;
  mutable uint64_t hash_ = 0;  // contentHash(), valid while hash_valid_
  mutable bool hash_valid_ = false;
};

// Product of dims, or -1 if a dim is negative or the product overflows int64.
int64_t checkedElementCount(const std::vector<int64_t>& dims);

// a * b and a + b, false when the result overflows int64 (the shape arithmetic of hostile
// models: a wrapped size would become a wrong constant or an undersized buffer).
inline bool checkedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool checkedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// A sparse tensor: values [NNZ] and indices [NNZ, rank] or [NNZ] over dense `dims`.
struct SparseTensor {
  Tensor values;
  Tensor indices;
  std::vector<int64_t> dims;
  std::string unknown_fields;
};

}  // namespace onnxfold
