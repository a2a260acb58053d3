// The ONNX op schemas (every version of every op of the default and preview domains),
// read from a table generated from the spec (tools/gen_op_schemas.py writes
// onnx_op_schemas.inc), so input/output counts, attributes and type constraints are
// written once. Validation (passes/validate.h) checks nodes against them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace onnxfold {

struct TypeConstraint {
  std::string name;  // "T", or a concrete type such as "tensor(int64)"
  // Allowed element types (bit = DataType) as a tensor, a sequence of tensors, an optional
  // tensor and an optional sequence.
  std::array<uint32_t, 4> masks{};
  bool allows(const Type& t) const;
  // "tensor(float16), tensor(float), ..." for messages.
  std::string describe() const;
};

struct FormalParameter {
  std::string name;
  int type = 0;  // index into OpSchema::types
  bool optional = false;
  bool variadic = false;
  bool heterogeneous = false;  // a variadic whose members may differ in type
};

// The spec's default of an INT, FLOAT or STRING attribute. type is kUndefined when the spec
// gives none (the attribute is required or has no default) and for list defaults, which the
// table does not keep. A FLOAT default is the value the changelog prints: rounded to 5 decimals
// (Selu's alpha 1.67326), or to 7 significant digits when it printed "(%e)" (Clip-6's max
// 3.402823e+38, not FLT_MAX).
struct AttributeDefault {
  AttrType type = AttrType::kUndefined;
  int64_t i = 0;
  float f = 0;
  std::string s;
};

struct AttributeSchema {
  std::string name;
  AttrType type = AttrType::kUndefined;
  bool required = false;
  AttributeDefault default_value;
  bool hasDefault() const { return default_value.type != AttrType::kUndefined; }
};

struct OpSchema {
  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int since_version = 0;
  bool deprecated = false;
  int min_inputs = 0, max_inputs = 0;  // max -1: unbounded
  int min_outputs = 0, max_outputs = 0;
  std::vector<AttributeSchema> attributes;
  std::vector<FormalParameter> inputs, outputs;
  std::vector<TypeConstraint> types;

  const AttributeSchema* attribute(std::string_view name) const;
  // The formal parameter actual input/output `i` binds to (the last one repeats when variadic),
  // or null past the end.
  const FormalParameter* input(size_t i) const { return formal(inputs, i); }
  const FormalParameter* output(size_t i) const { return formal(outputs, i); }

 private:
  static const FormalParameter* formal(const std::vector<FormalParameter>& v, size_t i);
};

class OpSchemas {
 public:
  static const OpSchemas& instance();
  // The version of `op_type` in force at `opset` of `domain` ("" or "ai.onnx"), or null.
  const OpSchema* find(std::string_view domain, std::string_view op_type, int64_t opset) const;
  // The first version of `op_type` (to say "exists from opset N"), or null.
  const OpSchema* first(std::string_view domain, std::string_view op_type) const;
  // Domains whose schemas the table has, and the newest opset of each it knows.
  bool knowsDomain(std::string_view domain) const;
  int newestOpset(std::string_view domain) const;
  size_t size() const { return schemas_.size(); }
  // Every version of every op, sorted by (domain, op_type, since_version).
  const std::vector<OpSchema>& all() const { return schemas_; }

 private:
  OpSchemas();
  std::vector<OpSchema> schemas_;                    // sorted by (domain, op_type, since_version)
  std::vector<std::pair<std::string, int>> newest_;  // per domain (a handful)
};

}  // namespace onnxfold
