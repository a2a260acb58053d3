// Type: the IR form of TypeProto (tensor, sparse tensor, sequence, map, optional),
// with shapes whose dims are a known size, a symbol ("batch") or unknown.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace onnxfold {

struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string param;   // symbolic name when value < 0 (may be empty: unknown)
  std::string denotation;
  std::string unknown_fields;

  Dim() = default;
  static Dim known(int64_t v) {
    Dim d;
    d.value = v;
    return d;
  }
  static Dim symbol(std::string name) {
    Dim d;
    d.param = std::move(name);
    return d;
  }
  bool isKnown() const { return value >= 0; }
  bool operator==(const Dim& o) const {
    return value == o.value && param == o.param && denotation == o.denotation &&
           unknown_fields == o.unknown_fields;
  }
  bool operator!=(const Dim& o) const { return !(*this == o); }
};

struct Shape {
  std::vector<Dim> dims;
  std::string unknown_fields;
  size_t rank() const { return dims.size(); }
  bool isStatic() const;
  bool operator==(const Shape& o) const {
    return dims == o.dims && unknown_fields == o.unknown_fields;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
};

class Type {
 public:
  enum class Kind { kNone, kTensor, kSparseTensor, kSequence, kMap, kOptional };

  Type() = default;
  Type(const Type& o);
  Type& operator=(const Type& o);
  Type(Type&&) = default;
  Type& operator=(Type&&) = default;

  static Type tensor(DataType elem, std::optional<Shape> shape = std::nullopt);
  static Type sequence(Type elem);
  static Type optional(Type elem);

  Kind kind = Kind::kNone;
  // Tensor / sparse tensor element type; the key type for maps.
  DataType elem_type = DataType::kUndefined;
  std::optional<Shape> shape;  // tensor / sparse tensor; nullopt = rank unknown
  std::unique_ptr<Type> elem;  // sequence / optional element; map value
  std::string denotation;
  std::string unknown_fields;        // of TypeProto itself
  std::string inner_unknown_fields;  // of the Tensor/Sequence/Map/... sub-message

  bool isNone() const { return kind == Kind::kNone; }
  bool isTensor() const { return kind == Kind::kTensor; }
  bool operator==(const Type& o) const;
  bool operator!=(const Type& o) const { return !(*this == o); }
};

}  // namespace onnxfold
