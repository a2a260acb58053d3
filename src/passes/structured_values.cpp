#include "passes/structured_values.h"

namespace onnxfold {

namespace {

bool allInitializers(const Node& n) {
  for (const Value* v : n.inputs()) {
    if (v == nullptr || !v->isInitializer()) return false;
  }
  return true;
}

Value* buildSequence(Rewriter& rw, Node* before, const Tensor& value, const std::string& base) {
  std::vector<Value*> parts;
  for (size_t k = 0; k < value.elements().size(); ++k)
    parts.push_back(rw.constant(value.elements()[k], base + "_" + std::to_string(k)));
  Node* n = parts.empty() ? rw.create("SequenceEmpty", {}, 1, before)
                          : rw.create("SequenceConstruct", parts, 1, before);
  if (parts.empty())
    rw.setAttr(n, Attribute::makeInt("dtype", static_cast<int64_t>(value.dtype())));
  n->output(0)->type = Type::sequence(Type::tensor(value.dtype()));
  return n->output(0);
}

}  // namespace

bool isCanonicalStructure(const Node& n) {
  if (n.isOp("SequenceEmpty")) return true;
  if (n.isOp("SequenceConstruct")) return allInitializers(n);
  if (!n.isOp("Optional")) return false;
  if (n.numInputs() == 0 || n.input(0) == nullptr || n.input(0)->isInitializer()) return true;
  const Node* p = n.input(0)->producer();
  return p != nullptr && (p->isOp("SequenceEmpty") || p->isOp("SequenceConstruct")) &&
         isCanonicalStructure(*p);
}

bool canBuildStructure(const Type& type, const Tensor& value) {
  if (value.kind() == Tensor::Kind::kNone) {
    return type.kind == Type::Kind::kOptional && type.elem && !type.elem->isNone();
  }
  return value.kind() == Tensor::Kind::kSequence || type.kind == Type::Kind::kOptional;
}

Value* buildStructure(Rewriter& rw, Node* before, const Type& type, const Tensor& value,
                      const std::string& base) {
  Value* inner = nullptr;
  if (value.kind() == Tensor::Kind::kSequence) {
    inner = buildSequence(rw, before, value, base);
  } else if (value.kind() == Tensor::Kind::kPlain) {
    inner = rw.constant(value, base);
  }
  if (type.kind != Type::Kind::kOptional) return inner;
  Node* opt =
      rw.create("Optional", inner ? std::vector<Value*>{inner} : std::vector<Value*>{}, 1, before);
  if (inner == nullptr) {
    Attribute a;
    a.name = "type";
    a.type = AttrType::kTypeProto;
    a.tp = *type.elem;
    rw.setAttr(opt, std::move(a));
  }
  opt->output(0)->type = type;
  return opt->output(0);
}

}  // namespace onnxfold
