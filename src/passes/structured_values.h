// Sequences and optionals that fold-constants computes (SplitToSequence of a constant, an
// Optional of a weight): they cannot be initializers, so a known one is written as the
// nodes that build it from constants, its canonical form:
//   sequence  -> SequenceConstruct(c0, c1, ...)   (SequenceEmpty when it has no element)
//   optional  -> Optional(c) / Optional(SequenceConstruct(...)), or Optional() {type} if empty
// A node already in that form is left as it is (folding it again would never converge).
#pragma once

#include <string>

#include "ir/graph.h"
#include "passes/rewrite.h"

namespace onnxfold {

// `n` builds its output from constants only, in the canonical form above.
bool isCanonicalStructure(const Node& n);

// Whether `value` (a sequence, an empty optional, or the value of an optional-typed `type`)
// can be written in canonical form: an empty optional needs its element type.
bool canBuildStructure(const Type& type, const Tensor& value);

// Builds `value` of type `type` in canonical form before `before`; returns the value.
// Precondition: canBuildStructure(type, value).
Value* buildStructure(Rewriter& rw, Node* before, const Type& type, const Tensor& value,
                      const std::string& base);

}  // namespace onnxfold
