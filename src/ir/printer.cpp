#include "ir/printer.h"

#include <iomanip>
#include <sstream>

namespace onnxfold {

namespace {

std::string hex(const std::string& bytes) {
  std::ostringstream os;
  for (unsigned char c : bytes)
    os << std::hex << std::setw(2) << std::setfill('0') << int(c);
  return os.str();
}

std::string shapeString(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.dims.size(); ++i) {
    if (i) out += ",";
    const Dim& d = s.dims[i];
    out += d.isKnown() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param);
  }
  return out + "]";
}

class Printer {
 public:
  Printer(std::ostream& os, const PrintOptions& o) : os_(os), o_(o) {}

  void meta(int ind, const std::string& doc, const StringPairs& props, const std::string& unknown) {
    if (!o_.metadata) return;
    if (!doc.empty()) line(ind) << "doc: " << std::quoted(doc) << "\n";
    for (const auto& [k, v] : props)
      line(ind) << "meta " << std::quoted(k) << " = " << std::quoted(v) << "\n";
    if (!unknown.empty()) line(ind) << "unknown: " << hex(unknown) << "\n";
  }

  std::ostream& line(int ind) { return os_ << std::string(static_cast<size_t>(ind) * 2, ' '); }

  std::string valueDecl(const Value* v) {
    std::string s = "%" + v->name();
    if (!v->type.isNone()) s += ": " + toString(v->type);
    return s;
  }

  std::string attrValue(const Attribute& a, int ind) {
    std::ostringstream os;
    if (!a.ref_attr_name.empty()) return "@" + a.ref_attr_name;
    switch (a.type) {
      case AttrType::kFloat:
        os << a.f;
        break;
      case AttrType::kInt:
        os << a.i;
        break;
      case AttrType::kString:
        os << std::quoted(a.s);
        break;
      case AttrType::kTensor:
        os << toString(a.t, o_.max_inline_elements);
        break;
      case AttrType::kFloats:
      case AttrType::kInts:
      case AttrType::kStrings: {
        os << "[";
        size_t n = a.type == AttrType::kFloats ? a.floats.size()
                   : a.type == AttrType::kInts ? a.ints.size()
                                               : a.strings.size();
        for (size_t i = 0; i < n; ++i) {
          if (i) os << ",";
          if (a.type == AttrType::kFloats)
            os << a.floats[i];
          else if (a.type == AttrType::kInts)
            os << a.ints[i];
          else
            os << std::quoted(a.strings[i]);
        }
        os << "]";
        break;
      }
      case AttrType::kTensors:
        os << "[";
        for (size_t i = 0; i < a.tensors.size(); ++i) {
          os << (i ? "," : "") << toString(a.tensors[i], o_.max_inline_elements);
        }
        os << "]";
        break;
      case AttrType::kGraph:
      case AttrType::kGraphs: {
        std::ostringstream sub;
        Printer p(sub, o_);
        if (a.g) p.graph(*a.g, ind + 2);
        for (const auto& g : a.graphs)
          p.graph(*g, ind + 2);
        os << "{\n" << sub.str() << std::string(static_cast<size_t>(ind + 1) * 2, ' ') << "}";
        break;
      }
      case AttrType::kTypeProto:
        os << toString(a.tp);
        break;
      case AttrType::kTypeProtos:
        for (const Type& t : a.type_protos)
          os << toString(t) << ";";
        break;
      case AttrType::kSparseTensor:
        os << "sparse(" << toString(a.sparse_tensor.values) << ","
           << toString(a.sparse_tensor.indices) << ")";
        break;
      case AttrType::kSparseTensors:
        os << "sparse x" << a.sparse_tensors.size();
        break;
      default:
        os << "?";
        break;
    }
    return os.str();
  }

  void node(const Node& n, int ind) {
    std::ostream& os = line(ind);
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      os << (i ? ", " : "") << (n.output(i) ? "%" + n.output(i)->name() : std::string("_"));
    }
    os << (n.numOutputs() ? " = " : "");
    if (!n.domain.empty()) os << n.domain << "::";
    os << n.op_type;
    if (!n.overload.empty()) os << ":" << n.overload;
    os << "(";
    for (size_t i = 0; i < n.numInputs(); ++i) {
      os << (i ? ", " : "") << (n.input(i) ? "%" + n.input(i)->name() : std::string("_"));
    }
    os << ")";
    if (!n.attributes.empty()) {
      os << " {";
      for (size_t i = 0; i < n.attributes.size(); ++i) {
        const Attribute& a = n.attributes[i];
        os << (i ? ", " : "") << a.name << "=" << attrValue(a, ind);
        if (o_.metadata && !a.doc_string.empty()) os << " doc:" << std::quoted(a.doc_string);
        if (o_.metadata && !a.unknown_fields.empty()) os << " unknown:" << hex(a.unknown_fields);
      }
      os << "}";
    }
    if (!n.name.empty()) os << "  # " << n.name;
    os << "\n";
    meta(ind + 1, n.doc_string, n.metadata_props, n.unknown_fields);
    for (const std::string& d : n.device_configurations)
      line(ind + 1) << "device: " << hex(d) << "\n";
    for (const Value* v : n.outputs()) {
      if (v && (v->in_value_info || !v->type.isNone())) {
        line(ind + 1) << "info " << valueDecl(v) << (v->in_value_info ? "" : " (inferred)") << "\n";
        meta(ind + 2, v->doc_string, v->metadata_props, v->value_info_unknown_fields);
      }
    }
  }

  void graph(const Graph& g, int ind) {
    line(ind) << "graph " << g.name << " {\n";
    meta(ind + 1, g.doc_string, g.metadata_props, g.unknown_fields);
    for (const Value* v : g.inputs()) {
      line(ind + 1) << "input " << valueDecl(v) << (v->isInitializer() ? " (has default)" : "")
                    << "\n";
      meta(ind + 2, v->doc_string, v->metadata_props, v->value_info_unknown_fields);
    }
    for (const Value* v : g.initializers()) {
      line(ind + 1) << "init %" << v->name() << " = "
                    << toString(*v->initializer(), o_.max_inline_elements);
      if (v->in_value_info) os_ << "  info " << toString(v->type);
      os_ << "\n";
      const Tensor& t = *v->initializer();
      meta(ind + 2, t.doc_string, t.metadata_props, t.unknown_fields);
    }
    for (const Value* v : g.sparseInitializers()) {
      line(ind + 1) << "sparse_init %" << v->name() << " = sparse("
                    << toString(v->sparseInitializer()->values) << ", "
                    << toString(v->sparseInitializer()->indices) << ")\n";
    }
    for (const Node* n : g.nodes())
      node(*n, ind + 1);
    for (const OrphanValueInfo& o : g.orphan_value_info) {
      line(ind + 1) << "orphan info %" << o.name << ": " << toString(o.type) << "\n";
    }
    for (const std::string& q : g.quantization_annotation)
      line(ind + 1) << "quant_annotation " << hex(q) << "\n";
    std::ostream& os = line(ind + 1);
    os << "return ";
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      os << (i ? ", " : "") << valueDecl(g.outputs()[i]);
    }
    os << "\n";
    line(ind) << "}\n";
  }

  void model(const Model& m) {
    os_ << "model ir_version=" << m.ir_version << " opsets=";
    for (size_t i = 0; i < m.opset_import.size(); ++i) {
      const OpsetId& o = m.opset_import[i];
      os_ << (i ? "," : "") << (o.domain.empty() ? "ai.onnx" : o.domain) << ":" << o.version;
      if (!o.unknown_fields.empty()) os_ << "(unknown:" << hex(o.unknown_fields) << ")";
    }
    os_ << "\n";
    if (!m.producer_name.empty() || !m.producer_version.empty()) {
      os_ << "producer " << std::quoted(m.producer_name) << " " << std::quoted(m.producer_version)
          << "\n";
    }
    if (!m.domain.empty() || m.model_version)
      os_ << "domain " << m.domain << " version " << m.model_version << "\n";
    meta(0, m.doc_string, m.metadata_props, m.unknown_fields);
    for (const std::string& c : m.configuration)
      os_ << "configuration " << hex(c) << "\n";
    graph(*m.graph, 0);
    for (const Function& f : m.functions) {
      os_ << "function " << f.domain << "::" << f.name;
      if (!f.overload.empty()) os_ << ":" << f.overload;
      os_ << " attrs=[";
      for (size_t i = 0; i < f.attribute_names.size(); ++i)
        os_ << (i ? "," : "") << f.attribute_names[i];
      for (const Attribute& a : f.attribute_defaults)
        os_ << "," << a.name << "=" << attrValue(a, 0);
      os_ << "] opsets=";
      for (const OpsetId& o : f.opset_import)
        os_ << o.domain << ":" << o.version << ",";
      os_ << "\n";
      meta(1, f.doc_string, f.metadata_props, f.unknown_fields);
      graph(*f.body, 1);
    }
    for (const TrainingInfo& t : m.training_info) {
      os_ << "training_info\n";
      if (t.initialization) graph(*t.initialization, 1);
      if (t.algorithm) graph(*t.algorithm, 1);
      for (const auto& [k, v] : t.initialization_binding)
        os_ << "  init_bind " << k << "=" << v << "\n";
      for (const auto& [k, v] : t.update_binding)
        os_ << "  update_bind " << k << "=" << v << "\n";
    }
  }

 private:
  std::ostream& os_;
  const PrintOptions& o_;
};

}  // namespace

std::string toString(const Type& t) {
  switch (t.kind) {
    case Type::Kind::kNone:
      return "?";
    case Type::Kind::kTensor:
    case Type::Kind::kSparseTensor: {
      std::string s = t.kind == Type::Kind::kSparseTensor ? "sparse " : "";
      s += std::string(dataTypeName(t.elem_type));
      s += t.shape ? shapeString(*t.shape) : std::string("[*]");
      return s;
    }
    case Type::Kind::kSequence:
      return "seq(" + (t.elem ? toString(*t.elem) : "?") + ")";
    case Type::Kind::kOptional:
      return "optional(" + (t.elem ? toString(*t.elem) : "?") + ")";
    case Type::Kind::kMap:
      return "map(" + std::string(dataTypeName(t.elem_type)) + "," +
             (t.elem ? toString(*t.elem) : "?") + ")";
  }
  return "?";
}

std::string toString(const Tensor& t, size_t max_inline) {
  std::ostringstream os;
  os << dataTypeName(t.dtype()) << "[";
  for (size_t i = 0; i < t.dims().size(); ++i)
    os << (i ? "," : "") << t.dims()[i];
  os << "]";
  if (t.external) {
    os << " external(" << t.external->location << "@" << t.external->offset << ")";
  }
  if (!t.isLoaded()) return os.str();
  const int64_t n = t.numElements();
  if (n >= 0 && static_cast<size_t>(n) <= max_inline && t.dtype() != DataType::kString) {
    os << " " << hex(std::string(t.buffer().view()));
  } else if (n >= 0 && static_cast<size_t>(n) <= max_inline) {
    for (const std::string& s : t.strings())
      os << " " << std::quoted(s);
  } else {
    os << " #" << std::hex << t.contentHash();
  }
  if (t.segment) os << " segment(" << t.segment->first << "," << t.segment->second << ")";
  return os.str();
}

void print(std::ostream& os, const Model& m, const PrintOptions& o) {
  Printer(os, o).model(m);
}
void print(std::ostream& os, const Graph& g, const PrintOptions& o) {
  Printer(os, o).graph(g, 0);
}

std::string toString(const Model& m, const PrintOptions& o) {
  std::ostringstream os;
  print(os, m, o);
  return os.str();
}

std::string toString(const Graph& g, const PrintOptions& o) {
  std::ostringstream os;
  print(os, g, o);
  return os.str();
}

}  // namespace onnxfold
