#include "onnx/writer.h"

#include <algorithm>
#include <cstring>

#include "ir/error.h"
#include "onnx/proto_fields.h"
#include "onnx/wire.h"

namespace onnxfold {

namespace {

using wire::WireType;

// Bytes below this size are copied into the encoded pieces; larger ones are
// referenced in place (zero-copy).
constexpr size_t kViewThreshold = 4096;

// A sequence of owned encoded pieces and tensor Buffers (views of the input,
// source ranges, results), written in order without joining them.
class Rope {
 public:
  Rope() { pieces_.emplace_back(); }

  std::string& tail() { return pieces_.back().owned; }

  void appendBuffer(const Buffer& b) {
    // A computed tensor (a source that is no input file) stays a piece whatever its size: it is
    // computed when written, in file order, not while the rope is built or sized.
    const bool computed = b.isSourceRange() && b.source()->location().empty();
    if (b.size() < kViewThreshold && !computed) {
      std::string& t = tail();
      const size_t at = t.size();
      t.resize(at + b.size());
      b.copyTo(0, b.size(), reinterpret_cast<uint8_t*>(&t[at]));
      return;
    }
    Piece v;
    v.buffer = b;
    v.is_buffer = true;
    pieces_.push_back(std::move(v));
    pieces_.emplace_back();
  }

  void append(Rope&& r) {
    if (r.pieces_.size() == 1) {
      tail() += r.pieces_[0].owned;
      return;
    }
    for (Piece& p : r.pieces_) {
      if (!p.is_buffer && p.owned.size() < 256 && !pieces_.back().is_buffer) {
        tail() += p.owned;  // merge small pieces so the rope stays short
      } else {
        pieces_.push_back(std::move(p));
      }
    }
    if (pieces_.back().is_buffer) pieces_.emplace_back();
  }

  uint64_t size() const {
    uint64_t n = 0;
    for (const Piece& p : pieces_)
      n += p.is_buffer ? p.buffer.size() : p.owned.size();
    return n;
  }

  void writeTo(Sink& sink) const {
    for (const Piece& p : pieces_) {
      if (p.is_buffer) {
        sink.writeBuffer(p.buffer);
      } else if (!p.owned.empty()) {
        sink.write(reinterpret_cast<const uint8_t*>(p.owned.data()), p.owned.size());
      }
    }
  }

 private:
  struct Piece {
    std::string owned;
    Buffer buffer;
    bool is_buffer = false;
  };
  std::vector<Piece> pieces_;
};

// Field encoders appending to a Rope's tail.
class Enc {
 public:
  explicit Enc(Rope& r) : r_(r) {}

  void varint(uint32_t field, uint64_t v) {
    wire::appendKey(r_.tail(), field, WireType::varint);
    wire::appendVarint(r_.tail(), v);
  }
  void int64(uint32_t field, int64_t v) { varint(field, static_cast<uint64_t>(v)); }
  void f32(uint32_t field, float v) {
    wire::appendKey(r_.tail(), field, WireType::fixed32);
    char b[4];
    std::memcpy(b, &v, 4);
    r_.tail().append(b, 4);
  }
  void bytes(uint32_t field, std::string_view s) {
    wire::appendKey(r_.tail(), field, WireType::length_delimited);
    wire::appendVarint(r_.tail(), s.size());
    r_.tail().append(s.data(), s.size());
  }
  void str(uint32_t field, const std::string& s) {
    if (!s.empty()) bytes(field, s);
  }
  void bytesView(uint32_t field, const Buffer& b) {
    wire::appendKey(r_.tail(), field, WireType::length_delimited);
    wire::appendVarint(r_.tail(), b.size());
    r_.appendBuffer(b);
  }
  void message(uint32_t field, Rope&& child) {
    wire::appendKey(r_.tail(), field, WireType::length_delimited);
    wire::appendVarint(r_.tail(), child.size());
    r_.append(std::move(child));
  }
  void raw(const std::string& encoded) { r_.tail() += encoded; }

 private:
  Rope& r_;
};

class Writer {
 public:
  explicit Writer(const WriteOptions& o) : opts_(o) {}

  Rope model(const Model& m) {
    Rope r;
    Enc e(r);
    if (m.ir_version) e.int64(1, m.ir_version);
    e.str(2, m.producer_name);
    e.str(3, m.producer_version);
    e.str(4, m.domain);
    if (m.model_version) e.int64(5, m.model_version);
    e.str(6, m.doc_string);
    if (m.graph) e.message(7, graph(*m.graph));
    for (const OpsetId& o : m.opset_import)
      e.message(8, opset(o));
    for (const StringPair& p : m.metadata_props)
      e.message(14, pair(p));
    for (const TrainingInfo& t : m.training_info)
      e.message(20, training(t));
    for (const Function& f : m.functions)
      e.message(25, function(f));
    for (const std::string& c : m.configuration)
      e.bytes(26, c);
    e.raw(m.unknown_fields);
    return r;
  }

  // The external-data files: "<location>", then "<location>.1", ... (the separator is
  // external_chunk_separator) when a file would pass external_file_limit.
  struct ExternalFile {
    std::string location;
    Rope rope;
    uint64_t size = 0;
    size_t tensors = 0;
  };
  std::vector<ExternalFile> external_;
  std::vector<std::string> reused_;

  uint64_t alignUp(uint64_t n) const {
    const uint64_t a = opts_.external_alignment;
    return (n + a - 1) / a * a;
  }

  ExternalFile& externalFileFor(uint64_t bytes) {
    const uint64_t limit = opts_.external_file_limit;
    if (external_.empty() || (limit != 0 && external_.back().tensors != 0 &&
                              alignUp(external_.back().size) + bytes > limit)) {
      ExternalFile f;
      f.location = opts_.external_location;
      if (!external_.empty())
        f.location += opts_.external_chunk_separator + std::to_string(external_.size());
      external_.push_back(std::move(f));
    }
    return external_.back();
  }

 private:
  Rope pair(const StringPair& p) {
    Rope r;
    Enc e(r);
    e.str(1, p.first);
    e.str(2, p.second);
    return r;
  }

  Rope opset(const OpsetId& o) {
    Rope r;
    Enc e(r);
    // The default domain is written as "" by convention; an explicit value is kept.
    e.str(1, o.domain);
    e.int64(2, o.version);
    e.raw(o.unknown_fields);
    return r;
  }

  Rope shape(const Shape& s) {
    Rope r;
    Enc e(r);
    for (const Dim& d : s.dims) {
      Rope dr;
      Enc de(dr);
      if (d.value >= 0)
        de.int64(1, d.value);
      else if (!d.param.empty())
        de.bytes(2, d.param);
      de.str(3, d.denotation);
      de.raw(d.unknown_fields);
      e.message(1, std::move(dr));
    }
    e.raw(s.unknown_fields);
    return r;
  }

  Rope type(const Type& t) {
    Rope r;
    Enc e(r);
    Rope inner;
    Enc ie(inner);
    uint32_t field = 0;
    switch (t.kind) {
      case Type::Kind::kTensor:
      case Type::Kind::kSparseTensor:
        field = t.kind == Type::Kind::kTensor ? 1 : 8;
        if (t.elem_type != DataType::kUndefined) ie.int64(1, static_cast<int32_t>(t.elem_type));
        if (t.shape) ie.message(2, shape(*t.shape));
        break;
      case Type::Kind::kSequence:
      case Type::Kind::kOptional:
        field = t.kind == Type::Kind::kSequence ? 4 : 9;
        if (t.elem) ie.message(1, type(*t.elem));
        break;
      case Type::Kind::kMap:
        field = 5;
        ie.int64(1, static_cast<int32_t>(t.elem_type));
        if (t.elem) ie.message(2, type(*t.elem));
        break;
      case Type::Kind::kNone:
        break;
    }
    ie.raw(t.inner_unknown_fields);
    // Field order: tensor(1), sequence(4), map(5), denotation(6), sparse(8), optional(9).
    if (field != 0 && field < 6) e.message(field, std::move(inner));
    e.str(6, t.denotation);
    if (field > 6) e.message(field, std::move(inner));
    e.raw(t.unknown_fields);
    return r;
  }

  Rope valueInfo(const std::string& name, const Type& t, const std::string& doc,
                 const StringPairs& meta, const std::string& unknown) {
    Rope r;
    Enc e(r);
    e.str(1, name);
    if (!t.isNone()) e.message(2, type(t));
    e.str(3, doc);
    for (const StringPair& p : meta)
      e.message(4, pair(p));
    e.raw(unknown);
    return r;
  }
  Rope valueInfo(const Value& v) {
    return valueInfo(v.name(), v.type, v.doc_string, v.metadata_props, v.value_info_unknown_fields);
  }

  bool goesExternal(const Tensor& t) const {
    return opts_.external_threshold >= 0 && t.dtype() != DataType::kString && t.isLoaded() &&
           static_cast<int64_t>(t.byteSize()) >= opts_.external_threshold && !shapeSized(t);
  }
  // A small int32/int64 tensor (under kInlineIntegerBytes) may be a shape, axes, pads or
  // repeats, and any tensor under kInlineBytes Resize scales or Range bounds: ONNX Runtime's
  // shape inference reads those values when it loads the model and fails on external data
  // ("Cannot parse data from external tensors"), so they stay inline whatever the threshold.
  static bool shapeSized(const Tensor& t) {
    const bool integer = t.dtype() == DataType::kInt64 || t.dtype() == DataType::kInt32;
    return t.byteSize() < (integer ? kInlineIntegerBytes : kInlineBytes);
  }

  Rope tensor(const Tensor& t) {
    Rope r;
    Enc e(r);
    for (int64_t d : t.dims())
      e.int64(1, d);
    e.int64(2, static_cast<int32_t>(t.dtype()));
    if (t.segment) {
      Rope sr;
      Enc se(sr);
      se.int64(1, t.segment->first);
      se.int64(2, t.segment->second);
      e.message(3, std::move(sr));
    }
    if (t.dtype() == DataType::kString) {
      for (const std::string& s : t.strings())
        e.bytes(6, s);
    }
    e.str(8, t.name);
    const bool external = goesExternal(t);
    const bool keep_reference = !t.isLoaded();  // unresolved external data: keep it as it was
    const Buffer& b = t.buffer();
    const bool reused =
        external && opts_.reuse_input_data && b.isSourceRange() && !b.source()->location().empty();
    if (!external && !keep_reference && t.dtype() != DataType::kString) e.bytesView(9, t.buffer());
    e.str(12, t.doc_string);
    if (external || keep_reference) {
      ExternalDataRef ref;
      if (reused) {
        ref.location = b.source()->location();
        ref.offset = static_cast<int64_t>(b.sourceOffset());
        ref.length = static_cast<int64_t>(t.byteSize());
        if (std::find(reused_.begin(), reused_.end(), ref.location) == reused_.end())
          reused_.push_back(ref.location);
      } else if (external) {
        ExternalFile& f = externalFileFor(t.byteSize());
        ref.location = f.location;
        const uint64_t aligned = alignUp(f.size);
        if (aligned > f.size) f.rope.tail().append(static_cast<size_t>(aligned - f.size), '\0');
        ref.offset = static_cast<int64_t>(aligned);
        ref.length = static_cast<int64_t>(t.byteSize());
        f.rope.appendBuffer(t.buffer());
        f.size = aligned + t.byteSize();
        ++f.tensors;
      } else {
        ref = *t.external;
      }
      const auto kv = [&](const std::string& k, const std::string& v) {
        e.message(13, pair({k, v}));
      };
      kv("location", ref.location);
      if (ref.offset != 0 || external) kv("offset", std::to_string(ref.offset));
      if (ref.length >= 0) kv("length", std::to_string(ref.length));
      if (!ref.checksum.empty() && !external) kv("checksum", ref.checksum);
      if (!external) {
        for (const StringPair& p : ref.other)
          kv(p.first, p.second);
      }
      e.int64(14, 1);
    }
    for (const StringPair& p : t.metadata_props)
      e.message(16, pair(p));
    e.raw(t.unknown_fields);
    return r;
  }

  Rope sparse(const SparseTensor& s) {
    Rope r;
    Enc e(r);
    e.message(1, tensor(s.values));
    e.message(2, tensor(s.indices));
    for (int64_t d : s.dims)
      e.int64(3, d);
    e.raw(s.unknown_fields);
    return r;
  }

  Rope attribute(const Attribute& a) {
    Rope r;
    Enc e(r);
    e.str(1, a.name);
    const AttrType t = a.type;
    if (a.ref_attr_name.empty()) {
      if (t == AttrType::kFloat) e.f32(2, a.f);
      if (t == AttrType::kInt) e.int64(3, a.i);
      if (t == AttrType::kString) e.bytes(4, a.s);
      if (t == AttrType::kTensor) e.message(5, tensor(a.t));
      if (t == AttrType::kGraph && a.g) e.message(6, graph(*a.g));
      for (float f : a.floats)
        e.f32(7, f);
      for (int64_t i : a.ints)
        e.int64(8, i);
      for (const std::string& s : a.strings)
        e.bytes(9, s);
      for (const Tensor& x : a.tensors)
        e.message(10, tensor(x));
      for (const auto& g : a.graphs)
        e.message(11, graph(*g));
    }
    e.str(13, a.doc_string);
    if (a.ref_attr_name.empty()) {
      if (t == AttrType::kTypeProto) e.message(14, type(a.tp));
      for (const Type& x : a.type_protos)
        e.message(15, type(x));
    }
    if (t != AttrType::kUndefined) e.int64(20, static_cast<int32_t>(t));
    e.str(21, a.ref_attr_name);
    if (a.ref_attr_name.empty()) {
      if (t == AttrType::kSparseTensor) e.message(22, sparse(a.sparse_tensor));
      for (const SparseTensor& x : a.sparse_tensors)
        e.message(23, sparse(x));
    }
    e.raw(a.unknown_fields);
    return r;
  }

  Rope node(const Node& n) {
    Rope r;
    Enc e(r);
    for (const Value* v : n.inputs())
      e.bytes(1, v ? v->name() : std::string());
    for (const Value* v : n.outputs())
      e.bytes(2, v ? v->name() : std::string());
    e.str(3, n.name);
    e.bytes(4, n.op_type);
    for (const Attribute& a : n.attributes)
      e.message(5, attribute(a));
    e.str(6, n.doc_string);
    e.str(7, n.domain);
    e.str(8, n.overload);
    for (const StringPair& p : n.metadata_props)
      e.message(9, pair(p));
    for (const std::string& d : n.device_configurations)
      e.bytes(10, d);
    e.raw(n.unknown_fields);
    return r;
  }

  Rope graph(const Graph& g) {
    Rope r;
    Enc e(r);
    for (const Node* n : g.nodes())
      e.message(1, node(*n));
    e.str(2, g.name);
    for (const Value* v : g.initializers()) {
      Tensor t = *v->initializer();
      if (t.name != v->name()) t.name = v->name();
      e.message(5, tensor(t));
    }
    e.str(10, g.doc_string);
    for (const Value* v : g.inputs())
      e.message(11, valueInfo(*v));
    for (const Value* v : g.outputs())
      e.message(12, valueInfo(*v));
    // value_info in definition order: initializers, inputs, then node outputs.
    auto info = [&](const Value* v) {
      if (v != nullptr && v->in_value_info) e.message(13, valueInfo(*v));
    };
    for (const Value* v : g.initializers())
      info(v);
    for (const Value* v : g.inputs()) {
      if (!v->isInitializer()) info(v);
    }
    for (const Node* n : g.nodes()) {
      for (const Value* v : n->outputs())
        info(v);
    }
    for (const OrphanValueInfo& o : g.orphan_value_info) {
      e.message(13, valueInfo(o.name, o.type, o.doc_string, o.metadata_props, o.unknown_fields));
    }
    for (const std::string& q : g.quantization_annotation)
      e.bytes(14, q);
    for (const Value* v : g.sparseInitializers()) {
      SparseTensor s = *v->sparseInitializer();
      s.values.name = v->name();
      e.message(15, sparse(s));
    }
    for (const StringPair& p : g.metadata_props)
      e.message(16, pair(p));
    e.raw(g.unknown_fields);
    return r;
  }

  Rope training(const TrainingInfo& t) {
    Rope r;
    Enc e(r);
    if (t.initialization) e.message(1, graph(*t.initialization));
    if (t.algorithm) e.message(2, graph(*t.algorithm));
    for (const StringPair& p : t.initialization_binding)
      e.message(3, pair(p));
    for (const StringPair& p : t.update_binding)
      e.message(4, pair(p));
    e.raw(t.unknown_fields);
    return r;
  }

  Rope constantNode(const std::string& output, const Attribute& value) {
    Rope r;
    Enc e(r);
    e.bytes(2, output);
    e.bytes(4, "Constant");
    e.message(5, attribute(value));
    return r;
  }

  Rope function(const Function& f) {
    Rope r;
    Enc e(r);
    const Graph& b = *f.body;
    e.str(1, f.name);
    for (const Value* v : b.inputs())
      e.bytes(4, v->name());
    for (const Value* v : b.outputs())
      e.bytes(5, v->name());
    for (const std::string& a : f.attribute_names)
      e.bytes(6, a);
    // FunctionProto has no initializers: a body's constants (folds in a body make them) are
    // written as Constant nodes ahead of the nodes that read them.
    for (const Value* v : b.initializers()) {
      Attribute a;
      a.name = "value";
      a.type = AttrType::kTensor;
      a.t = *v->initializer();
      a.t.name.clear();
      e.message(7, constantNode(v->name(), a));
    }
    for (const Value* v : b.sparseInitializers()) {
      Attribute a;
      a.name = "sparse_value";
      a.type = AttrType::kSparseTensor;
      a.sparse_tensor = *v->sparseInitializer();
      e.message(7, constantNode(v->name(), a));
    }
    for (const Node* n : b.nodes())
      e.message(7, node(*n));
    e.str(8, f.doc_string);
    for (const OpsetId& o : f.opset_import)
      e.message(9, opset(o));
    e.str(10, f.domain);
    for (const Attribute& a : f.attribute_defaults)
      e.message(11, attribute(a));
    for (const Node* n : b.nodes()) {
      for (const Value* v : n->outputs()) {
        if (v != nullptr && v->in_value_info) e.message(12, valueInfo(*v));
      }
    }
    for (const Value* v : b.inputs()) {
      if (v->in_value_info) e.message(12, valueInfo(*v));
    }
    for (const OrphanValueInfo& o : b.orphan_value_info) {
      e.message(12, valueInfo(o.name, o.type, o.doc_string, o.metadata_props, o.unknown_fields));
    }
    e.str(13, f.overload);
    for (const StringPair& p : f.metadata_props)
      e.message(14, pair(p));
    e.raw(f.unknown_fields);
    return r;
  }

  const WriteOptions& opts_;
};

}  // namespace

WriteStats writeModel(const Model& model, Sink& sink, const WriteOptions& options) {
  Writer w(options);
  Rope r = w.model(model);
  WriteStats stats;
  stats.model_bytes = r.size();
  if (stats.model_bytes > kMaxProtoBytes) {
    throw Error("the model would be " + std::to_string(stats.model_bytes >> 20) +
                " MiB inline, over protobuf's 2 GiB limit; write its weights as external data "
                "(an external-data threshold)");
  }
  stats.reused_files = w.reused_;
  for (const auto& f : w.external_) {
    if (std::find(w.reused_.begin(), w.reused_.end(), f.location) != w.reused_.end()) {
      throw Error("the external-data output '" + f.location +
                  "' is a data file of the input the output refers to; choose another name");
    }
    if (!options.open_external) {
      throw Error("tensors go to external data, but no external-data file can be opened here");
    }
    std::unique_ptr<Sink> ext = options.open_external(f.location);
    ext->reserve(f.size);
    f.rope.writeTo(*ext);
    stats.external_bytes += f.size;
    stats.external_tensors += f.tensors;
    stats.external_files.push_back(f.location);
  }
  sink.reserve(stats.model_bytes);
  if (options.on_progress) {
    // Reports after each chunk, so a page's progress bar moves while a big model is written.
    class ProgressSink : public Sink {
     public:
      ProgressSink(Sink& inner, uint64_t total, const std::function<void(uint64_t, uint64_t)>& f)
          : inner_(inner), total_(total), f_(f) {}
      void write(const uint8_t* data, size_t size) override {
        inner_.write(data, size);
        done_ += size;
        f_(done_, total_);
      }
      void writeBuffer(const Buffer& b) override {
        inner_.writeBuffer(b);
        done_ += b.size();
        f_(done_, total_);
      }

     private:
      Sink& inner_;
      uint64_t total_;
      const std::function<void(uint64_t, uint64_t)>& f_;
      uint64_t done_ = 0;
    } progress(sink, stats.model_bytes, options.on_progress);
    r.writeTo(progress);
  } else {
    r.writeTo(sink);
  }
  return stats;
}

std::string writeModelToString(const Model& model) {
  StringSink s;
  writeModel(model, s);
  return std::move(s.out);
}

void chooseExternalData(const Model& model, WriteOptions& options) {
  if (options.external_threshold < 0) {
    bool external = false;
    for (const Value* v : model.graph->initializers())
      external = external || v->initializer()->external;
    if (external || inlineModelSize(model) > kMaxProtoBytes) options.external_threshold = 1024;
  }
  if (options.external_threshold >= 0 && options.external_location.empty())
    options.external_location = "model.onnx.data";
}

uint64_t inlineModelSize(const Model& model) {
  WriteOptions o;
  Writer w(o);
  return w.model(model).size();
}

}  // namespace onnxfold
