#include "ir/type.h"

namespace onnxfold {

bool Shape::isStatic() const {
  for (const Dim& d : dims) {
    if (!d.isKnown()) return false;
  }
  return true;
}

Type::Type(const Type& o)
    : kind(o.kind),
      elem_type(o.elem_type),
      shape(o.shape),
      elem(o.elem ? std::make_unique<Type>(*o.elem) : nullptr),
      denotation(o.denotation),
      unknown_fields(o.unknown_fields),
      inner_unknown_fields(o.inner_unknown_fields) {}

Type& Type::operator=(const Type& o) {
  if (this != &o) *this = Type(o);
  return *this;
}

Type Type::tensor(DataType e, std::optional<Shape> s) {
  Type t;
  t.kind = Kind::kTensor;
  t.elem_type = e;
  t.shape = std::move(s);
  return t;
}

Type Type::sequence(Type e) {
  Type t;
  t.kind = Kind::kSequence;
  t.elem = std::make_unique<Type>(std::move(e));
  return t;
}

Type Type::optional(Type e) {
  Type t;
  t.kind = Kind::kOptional;
  t.elem = std::make_unique<Type>(std::move(e));
  return t;
}

bool Type::operator==(const Type& o) const {
  if (kind != o.kind || elem_type != o.elem_type || !(shape == o.shape) ||
      denotation != o.denotation || unknown_fields != o.unknown_fields ||
      inner_unknown_fields != o.inner_unknown_fields) {
    return false;
  }
  if (static_cast<bool>(elem) != static_cast<bool>(o.elem)) return false;
  return !elem || *elem == *o.elem;
}

}  // namespace onnxfold
