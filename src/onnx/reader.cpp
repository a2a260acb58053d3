// The ONNX reader: ModelProto bytes -> IR, one recursive-descent decoder over the wire format
// (onnx/wire.h). Over 800 lines on purpose: every message type (model, graph, node,
// attribute, tensor, sparse tensor, type, function, training info) shares the reader's state
// (the nesting depth, the pending subgraphs linked once their scope is known, external-data
// resolution, error context), and split across files that state would become a public header.
#include "onnx/reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/graph_builder.h"
#include "ir/verifier.h"
#include "onnx/proto_fields.h"
#include "onnx/wire.h"

namespace onnxfold {

using wire::FieldReader;

namespace {

// Deep nesting (types in types, graphs in graphs) is bounded so that corrupt
// input cannot exhaust the stack.
constexpr int kMaxNesting = 64;

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

// A parsed node waiting to be linked: names are resolved once its graph's
// values are known, in topological order.
struct PendingNode {
  std::unique_ptr<Node> node;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  size_t index = 0;  // position in the file, for messages and stable ordering
};

struct ValueInfoRec {
  std::string name;
  Type type;
  std::string doc_string;
  StringPairs metadata_props;
  std::string unknown_fields;
};

struct PendingGraph {
  std::vector<PendingNode> nodes;
  std::vector<ValueInfoRec> inputs;
  std::vector<ValueInfoRec> outputs;
  std::vector<ValueInfoRec> value_info;
  std::vector<Tensor> initializers;
  std::vector<SparseTensor> sparse_initializers;
  std::vector<std::string> sparse_names;
  // For function bodies: plain input/output names.
  bool is_function = false;
  std::vector<std::string> fn_inputs;
  std::vector<std::string> fn_outputs;
};

class Reader {
 public:
  Reader(const Buffer& bytes, const ReadOptions& options) : bytes_(bytes), options_(options) {}

  Tensor tensorProto() { return readTensor(bytes_.view()); }

  std::unique_ptr<Model> run() {
    auto model = std::make_unique<Model>();
    bool has_graph = false;
    FieldReader f(bytes_.view(), "ModelProto", proto::kModelFields);
    while (f.next()) {
      switch (static_cast<proto::ModelField>(f.tag())) {
        case proto::ModelField::kIrVersion:
          model->ir_version = f.getInt64();
          break;
        case proto::ModelField::kOpsetImport:
          model->opset_import.push_back(readOpset(f.getBytes()));
          break;
        case proto::ModelField::kProducerName:
          model->producer_name = f.getString();
          break;
        case proto::ModelField::kProducerVersion:
          model->producer_version = f.getString();
          break;
        case proto::ModelField::kDomain:
          model->domain = f.getString();
          break;
        case proto::ModelField::kModelVersion:
          model->model_version = f.getInt64();
          break;
        case proto::ModelField::kDocString:
          model->doc_string = f.getString();
          break;
        case proto::ModelField::kGraph:
          if (has_graph) f.fail("more than one graph");
          has_graph = true;
          graph_bytes_ = f.getBytes();
          break;
        case proto::ModelField::kMetadataProps:
          model->metadata_props.push_back(readStringPair(f.getBytes()));
          break;
        case proto::ModelField::kTrainingInfo:
          training_bytes_.push_back(f.getBytes());
          break;
        case proto::ModelField::kFunctions:
          function_bytes_.push_back(f.getBytes());
          break;
        case proto::ModelField::kConfiguration:
          model->configuration.push_back(f.getString());
          break;
        default:
          f.keepUnknown(model->unknown_fields);
          break;
      }
    }
    if (!has_graph) throw ParseError("ModelProto", "the model has no graph");

    // Main graph first: training graphs may refer to its initializers.
    PendingGraph main;
    Graph& g = *model->graph;
    parseGraph(graph_bytes_, g, main, 0, "graph");
    linkGraph(g, main, "graph " + quoted(g.name));

    for (std::string_view tb : training_bytes_) {
      model->training_info.push_back(readTrainingInfo(tb, g));
    }
    for (size_t i = 0; i < function_bytes_.size(); ++i) {
      model->functions.push_back(readFunction(function_bytes_[i], i));
    }
    // What was read must be valid IR (this also checks that every domain a node uses is
    // imported, which nothing above does).
    if (VerifyResult r = verify(*model); !r.ok) throw ParseError("ModelProto", r.message);
    return model;
  }

 private:
  // ------------------------------------------------------------ small messages

  StringPair readStringPair(std::string_view data) {
    StringPair p;
    FieldReader f(data, "StringStringEntryProto", proto::kStringPairFields);
    std::string unknown;
    while (f.next()) {
      switch (f.tag()) {
        case 1:
          p.first = f.getString();
          break;
        case 2:
          p.second = f.getString();
          break;
        default:
          f.keepUnknown(unknown);
          break;  // no place to keep it: dropped
      }
    }
    return p;
  }

  OpsetId readOpset(std::string_view data) {
    OpsetId o;
    FieldReader f(data, "OperatorSetIdProto", proto::kOpsetFields);
    while (f.next()) {
      switch (f.tag()) {
        case 1:
          o.domain = f.getString();
          break;
        case 2:
          o.version = f.getInt64();
          break;
        default:
          f.keepUnknown(o.unknown_fields);
          break;
      }
    }
    return o;
  }

  // ------------------------------------------------------------ types

  Shape readShape(std::string_view data) {
    Shape s;
    FieldReader f(data, "TensorShapeProto", proto::kShapeFields);
    while (f.next()) {
      if (f.tag() != 1) {
        f.keepUnknown(s.unknown_fields);
        continue;
      }
      Dim d;
      FieldReader df(f.getBytes(), "TensorShapeProto.Dimension", proto::kDimFields);
      while (df.next()) {
        switch (df.tag()) {
          case 1:
            d.value = df.getInt64();
            d.param.clear();
            if (d.value < 0) df.fail("negative dimension " + std::to_string(d.value));
            break;
          case 2:
            d.param = df.getString();
            d.value = -1;
            break;
          case 3:
            d.denotation = df.getString();
            break;
          default:
            df.keepUnknown(d.unknown_fields);
            break;
        }
      }
      s.dims.push_back(std::move(d));
    }
    return s;
  }

  DataType checkedDataType(FieldReader& f, int32_t v) {
    // UNDEFINED is allowed in types (e.g. unknown element type), not unknown numbers.
    if (v != 0 && !isKnownDataType(v)) f.fail("unknown data type " + std::to_string(v));
    return static_cast<DataType>(v);
  }

  // Reads TypeProto.Tensor / SparseTensor / Sequence / Map / Optional.
  void readTypeInner(std::string_view data, Type& t, int depth) {
    const char* name = t.kind == Type::Kind::kTensor         ? "TypeProto.Tensor"
                       : t.kind == Type::Kind::kSparseTensor ? "TypeProto.SparseTensor"
                       : t.kind == Type::Kind::kSequence     ? "TypeProto.Sequence"
                       : t.kind == Type::Kind::kMap          ? "TypeProto.Map"
                                                             : "TypeProto.Optional";
    FieldReader f(data, name, proto::kTypeInnerFields);
    const bool tensor_like = t.kind == Type::Kind::kTensor || t.kind == Type::Kind::kSparseTensor;
    while (f.next()) {
      const uint32_t tag = f.tag();
      if (tensor_like && tag == 1) {
        t.elem_type = checkedDataType(f, f.getInt32());
      } else if (tensor_like && tag == 2) {
        t.shape = readShape(f.getBytes());
      } else if ((t.kind == Type::Kind::kSequence || t.kind == Type::Kind::kOptional) && tag == 1) {
        t.elem = std::make_unique<Type>(readType(f.getBytes(), depth + 1));
      } else if (t.kind == Type::Kind::kMap && tag == 1) {
        t.elem_type = checkedDataType(f, f.getInt32());
      } else if (t.kind == Type::Kind::kMap && tag == 2) {
        t.elem = std::make_unique<Type>(readType(f.getBytes(), depth + 1));
      } else {
        f.keepUnknown(t.inner_unknown_fields);
      }
    }
  }

  Type readType(std::string_view data, int depth) {
    if (depth > kMaxNesting) throw ParseError("TypeProto", "types nested too deeply");
    Type t;
    FieldReader f(data, "TypeProto", proto::kTypeFields);
    while (f.next()) {
      Type::Kind kind = Type::Kind::kNone;
      switch (f.tag()) {
        case 1:
          kind = Type::Kind::kTensor;
          break;
        case 4:
          kind = Type::Kind::kSequence;
          break;
        case 5:
          kind = Type::Kind::kMap;
          break;
        case 9:
          kind = Type::Kind::kOptional;
          break;
        case 8:
          kind = Type::Kind::kSparseTensor;
          break;
        case 6:
          t.denotation = f.getString();
          continue;
        default:
          f.keepUnknown(t.unknown_fields);
          continue;
      }
      if (t.kind != Type::Kind::kNone) f.fail("more than one member of the 'value' oneof is set");
      t.kind = kind;
      readTypeInner(f.getBytes(), t, depth);
    }
    return t;
  }

  ValueInfoRec readValueInfo(std::string_view data) {
    ValueInfoRec v;
    FieldReader f(data, "ValueInfoProto", proto::kValueInfoFields);
    while (f.next()) {
      switch (f.tag()) {
        case 1:
          v.name = f.getString();
          break;
        case 2:
          v.type = readType(f.getBytes(), 0);
          break;
        case 3:
          v.doc_string = f.getString();
          break;
        case 4:
          v.metadata_props.push_back(readStringPair(f.getBytes()));
          break;
        default:
          f.keepUnknown(v.unknown_fields);
          break;
      }
    }
    return v;
  }

  // ------------------------------------------------------------ tensors

  // The payload a skeleton left in the model file where `raw` (empty) stands, or null.
  const std::pair<uint64_t, uint64_t>* elidedAt(std::string_view raw) const {
    if (options_.skeleton == nullptr) return nullptr;
    const auto at =
        static_cast<size_t>(reinterpret_cast<const uint8_t*>(raw.data()) - bytes_.data());
    const auto it = options_.skeleton->elided.find(at);
    return it == options_.skeleton->elided.end() ? nullptr : &it->second;
  }

  Buffer viewOf(std::string_view s) const {
    return Buffer(reinterpret_cast<const uint8_t*>(s.data()), s.size(), bytes_.owner());
  }

  Tensor readTensor(std::string_view data) {
    FieldReader f(data, "TensorProto", proto::kTensorFields);
    int32_t dtype_raw = 0;
    std::vector<int64_t> dims;
    std::string name, doc;
    StringPairs meta;
    std::string unknown;
    std::optional<std::pair<int64_t, int64_t>> segment;
    std::optional<std::string_view> raw;
    std::vector<float> floats;
    std::vector<int32_t> int32s;
    std::vector<int64_t> int64s;
    std::vector<double> doubles;
    std::vector<uint64_t> uint64s;
    std::vector<std::string> strings;
    StringPairs external;
    int64_t location = 0;
    bool typed_seen = false;

    while (f.next()) {
      switch (static_cast<proto::TensorField>(f.tag())) {
        case proto::TensorField::kDims:
          f.appendInt64s(dims);
          break;
        case proto::TensorField::kDataType:
          dtype_raw = f.getInt32();
          break;
        case proto::TensorField::kSegment: {
          std::pair<int64_t, int64_t> seg{0, 0};
          FieldReader sf(f.getBytes(), "TensorProto.Segment", proto::kSegmentFields);
          std::string ignored;
          while (sf.next()) {
            if (sf.tag() == 1)
              seg.first = sf.getInt64();
            else if (sf.tag() == 2)
              seg.second = sf.getInt64();
            else
              sf.keepUnknown(ignored);
          }
          segment = seg;
          break;
        }
        case proto::TensorField::kFloatData:
          f.appendFloats(floats);
          typed_seen = true;
          break;
        case proto::TensorField::kInt32Data:
          f.appendInt32s(int32s);
          typed_seen = true;
          break;
        case proto::TensorField::kStringData:
          strings.push_back(f.getString());
          break;
        case proto::TensorField::kInt64Data:
          f.appendInt64s(int64s);
          typed_seen = true;
          break;
        case proto::TensorField::kName:
          name = f.getString();
          break;
        case proto::TensorField::kDocString:
          doc = f.getString();
          break;
        case proto::TensorField::kRawData:
          raw = f.getBytes();
          break;
        case proto::TensorField::kExternalData:
          external.push_back(readStringPair(f.getBytes()));
          break;
        case proto::TensorField::kDataLocation:
          location = f.getInt64();
          break;
        case proto::TensorField::kDoubleData:
          f.appendDoubles(doubles);
          typed_seen = true;
          break;
        case proto::TensorField::kUint64Data:
          f.appendUint64s(uint64s);
          typed_seen = true;
          break;
        case proto::TensorField::kMetadataProps:
          meta.push_back(readStringPair(f.getBytes()));
          break;
        default:
          f.keepUnknown(unknown);
          break;
      }
    }

    const std::string where = "tensor " + quoted(name);
    if (!isKnownDataType(dtype_raw)) {
      throw ParseError(where, "data_type " + std::to_string(dtype_raw) + " is not a valid type");
    }
    const auto dtype = static_cast<DataType>(dtype_raw);
    for (int64_t d : dims) {
      if (d < 0) throw ParseError(where, "negative dimension " + std::to_string(d));
    }
    const int64_t n = checkedElementCount(dims);
    if (n < 0) throw ParseError(where, "element count overflows int64");
    // rawByteSize must not wrap around (it would accept 0 bytes for 2^61 floats).
    if (dtype != DataType::kString &&
        static_cast<uint64_t>(n) > (std::numeric_limits<size_t>::max() - 7) /
                                       static_cast<uint64_t>(bitsPerElement(dtype))) {
      throw ParseError(where, std::to_string(n) + " elements are too many to address");
    }

    Tensor t;
    if (dtype == DataType::kString) {
      if (static_cast<int64_t>(strings.size()) != n) {
        throw ParseError(where, "string_data has " + std::to_string(strings.size()) +
                                    " strings, dims need " + std::to_string(n));
      }
      t = Tensor(dtype, dims);
      t.mutableStrings() = std::move(strings);
    } else {
      const size_t need = rawByteSize(dtype, n);
      if (location == 1) {
        t = readExternal(where, dtype, dims, need, external);
      } else if (raw && raw->empty() && elidedAt(*raw) != nullptr) {
        // Left in the file (large): its length is checked like kept bytes, dims [0] too.
        const auto& [offset, length] = *elidedAt(*raw);
        if (length != need) {
          throw ParseError(where, "raw_data has " + std::to_string(length) + " bytes, " +
                                      std::string(dataTypeName(dtype)) + " dims need " +
                                      std::to_string(need));
        }
        t = Tensor(dtype, dims, rangeOf(options_.skeleton->source, offset, need));
      } else if (raw) {
        if (raw->size() != need) {
          throw ParseError(where, "raw_data has " + std::to_string(raw->size()) + " bytes, " +
                                      std::string(dataTypeName(dtype)) + " dims need " +
                                      std::to_string(need));
        }
        t = Tensor(dtype, dims, viewOf(*raw));
      } else if (typed_seen || n == 0) {
        t = decodeTyped(where, dtype, dims, n, floats, int32s, int64s, doubles, uint64s);
      } else {
        throw ParseError(where, "has " + std::to_string(n) + " elements but no data");
      }
    }
    t.name = std::move(name);
    t.doc_string = std::move(doc);
    t.metadata_props = std::move(meta);
    t.segment = segment;
    t.unknown_fields = std::move(unknown);
    return t;
  }

  Tensor readExternal(const std::string& where, DataType dtype, const std::vector<int64_t>& dims,
                      size_t need, const StringPairs& entries) {
    ExternalDataRef ref;
    bool has_location = false;
    for (const auto& [k, v] : entries) {
      if (k == "location") {
        ref.location = v;
        has_location = true;
      } else if (k == "offset" || k == "length") {
        char* end = nullptr;
        const long long x = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || x < 0) {
          throw ParseError(where,
                           "external_data " + k + " '" + v + "' is not a non-negative integer");
        }
        (k == "offset" ? ref.offset : ref.length) = x;
      } else if (k == "checksum") {
        ref.checksum = v;
      } else {
        ref.other.push_back({k, v});
      }
    }
    if (!has_location) throw ParseError(where, "external data without a 'location'");
    checkExternalLocation(ref.location, where);
    if (ref.length >= 0 && static_cast<size_t>(ref.length) != need) {
      throw ParseError(where, "external data length " + std::to_string(ref.length) +
                                  " does not match the " + std::to_string(need) +
                                  " bytes its dims need");
    }
    Tensor t;
    if (options_.open_external) {
      const std::shared_ptr<const Source> file = options_.open_external(ref.location);
      const auto off = static_cast<uint64_t>(ref.offset);
      if (off > file->size() || need > file->size() - off) {
        throw ParseError(where, "external data [" + std::to_string(off) + ", +" +
                                    std::to_string(need) + ") is outside '" + ref.location + "' (" +
                                    std::to_string(file->size()) + " bytes)");
      }
      t = Tensor(dtype, dims, rangeOf(file, off, need));
    } else {
      // Unloaded: keeps dtype and dims, no bytes (Tensor::isLoaded() is false).
      t = Tensor(dtype, {});
      t.setBuffer(Buffer());
      t.reshape(dims);
    }
    t.external = std::move(ref);
    return t;
  }

  Tensor decodeTyped(const std::string& where, DataType dtype, const std::vector<int64_t>& dims,
                     int64_t n, const std::vector<float>& floats,
                     const std::vector<int32_t>& int32s, const std::vector<int64_t>& int64s,
                     const std::vector<double>& doubles, const std::vector<uint64_t>& uint64s) {
    // Storage is allocated only once the value count matches the dims: dims may
    // declare far more elements than the model holds.
    Tensor t;
    auto alloc = [&] {
      t = Tensor(dtype, dims);
      return t.mutableBytes();
    };
    auto countError = [&](const char* field, size_t have, size_t want) {
      return ParseError(where, std::string(field) + " has " + std::to_string(have) + " values, " +
                                   std::string(dataTypeName(dtype)) + " dims need " +
                                   std::to_string(want));
    };
    const auto un = static_cast<size_t>(n);
    switch (dtype) {
      case DataType::kFloat:
      case DataType::kComplex64: {
        const size_t want = dtype == DataType::kFloat ? un : 2 * un;
        if (floats.size() != want) throw countError("float_data", floats.size(), want);
        uint8_t* out = alloc();
        if (want) std::memcpy(out, floats.data(), want * 4);
        break;
      }
      case DataType::kDouble:
      case DataType::kComplex128: {
        const size_t want = dtype == DataType::kDouble ? un : 2 * un;
        if (doubles.size() != want) throw countError("double_data", doubles.size(), want);
        uint8_t* out = alloc();
        if (want) std::memcpy(out, doubles.data(), want * 8);
        break;
      }
      case DataType::kInt64: {
        if (int64s.size() != un) throw countError("int64_data", int64s.size(), un);
        uint8_t* out = alloc();
        if (un) std::memcpy(out, int64s.data(), un * 8);
        break;
      }
      case DataType::kUint32:
      case DataType::kUint64: {
        if (uint64s.size() != un) throw countError("uint64_data", uint64s.size(), un);
        uint8_t* out = alloc();
        const size_t w = dtype == DataType::kUint32 ? 4 : 8;
        for (size_t i = 0; i < un; ++i)
          std::memcpy(out + i * w, &uint64s[i], w);  // little-endian
        break;
      }
      default: {
        // int32_data: one element per value for >= 8-bit types, one byte of packed
        // elements per value for 4- and 2-bit types.
        const int bits = bitsPerElement(dtype);
        const size_t want = bits >= 8 ? un : rawByteSize(dtype, n);
        if (int32s.size() != want) throw countError("int32_data", int32s.size(), want);
        uint8_t* out = alloc();
        const size_t w = bits >= 8 ? static_cast<size_t>(bits / 8) : 1;
        for (size_t i = 0; i < want; ++i)
          std::memcpy(out + i * w, &int32s[i], w);
        break;
      }
    }
    return t;
  }

  SparseTensor readSparseTensor(std::string_view data) {
    SparseTensor s;
    FieldReader f(data, "SparseTensorProto", proto::kSparseFields);
    while (f.next()) {
      switch (f.tag()) {
        case 1:
          s.values = readTensor(f.getBytes());
          break;
        case 2:
          s.indices = readTensor(f.getBytes());
          break;
        case 3:
          f.appendInt64s(s.dims);
          break;
        default:
          f.keepUnknown(s.unknown_fields);
          break;
      }
    }
    for (int64_t d : s.dims) {
      if (d < 0) throw ParseError("SparseTensorProto", "negative dimension " + std::to_string(d));
    }
    return s;
  }

  // ------------------------------------------------------------ attributes, nodes

  Attribute readAttribute(std::string_view data, Graph& owner_graph, Node* node, int depth,
                          std::vector<std::pair<Graph*, PendingGraph>>& subgraphs) {
    Attribute a;
    bool has_type = false;
    bool seen_f = false, seen_i = false, seen_s = false, seen_t = false, seen_g = false,
         seen_sp = false, seen_tp = false;
    FieldReader f(data, "AttributeProto", proto::kAttributeFields);
    auto subgraph = [&](std::string_view bytes) {
      auto g = std::make_unique<Graph>(&owner_graph, node);
      subgraphs.emplace_back(g.get(), PendingGraph());
      parseGraph(bytes, *g, subgraphs.back().second, depth + 1, "subgraph");
      return g;
    };
    try {
      while (f.next()) {
        switch (static_cast<proto::AttributeField>(f.tag())) {
          case proto::AttributeField::kName:
            a.name = f.getString();
            break;
          case proto::AttributeField::kRefAttrName:
            a.ref_attr_name = f.getString();
            break;
          case proto::AttributeField::kDocString:
            a.doc_string = f.getString();
            break;
          case proto::AttributeField::kType: {
            const int32_t t = f.getInt32();
            if (t < 0 || t > 14) f.fail("unknown attribute type " + std::to_string(t));
            a.type = static_cast<AttrType>(t);
            has_type = true;
            break;
          }
          case proto::AttributeField::kF:
            a.f = f.getFloat();
            seen_f = true;
            break;
          case proto::AttributeField::kI:
            a.i = f.getInt64();
            seen_i = true;
            break;
          case proto::AttributeField::kS:
            a.s = f.getString();
            seen_s = true;
            break;
          case proto::AttributeField::kT:
            a.t = readTensor(f.getBytes());
            seen_t = true;
            break;
          case proto::AttributeField::kG:
            a.g = subgraph(f.getBytes());
            seen_g = true;
            break;
          case proto::AttributeField::kSparseTensor:
            a.sparse_tensor = readSparseTensor(f.getBytes());
            seen_sp = true;
            break;
          case proto::AttributeField::kTp:
            a.tp = readType(f.getBytes(), 0);
            seen_tp = true;
            break;
          case proto::AttributeField::kFloats:
            f.appendFloats(a.floats);
            break;
          case proto::AttributeField::kInts:
            f.appendInt64s(a.ints);
            break;
          case proto::AttributeField::kStrings:
            a.strings.push_back(f.getString());
            break;
          case proto::AttributeField::kTensors:
            a.tensors.push_back(readTensor(f.getBytes()));
            break;
          case proto::AttributeField::kGraphs:
            a.graphs.push_back(subgraph(f.getBytes()));
            break;
          case proto::AttributeField::kSparseTensors:
            a.sparse_tensors.push_back(readSparseTensor(f.getBytes()));
            break;
          case proto::AttributeField::kTypeProtos:
            a.type_protos.push_back(readType(f.getBytes(), 0));
            break;
          default:
            f.keepUnknown(a.unknown_fields);
            break;
        }
      }
    } catch (const ParseError& e) {
      throw e.within("attribute " + quoted(a.name));
    }
    if (a.name.empty()) throw ParseError("AttributeProto", "attribute without a name");
    // One value field, of the declared type (as the ONNX checker requires): any other
    // field would be dropped by the writer, or a missing tensor written as invalid.
    if (has_type && a.type == AttrType::kUndefined) has_type = false;
    if (a.ref_attr_name.empty()) {
      const std::pair<bool, AttrType> fields[] = {
          {seen_f, AttrType::kFloat},
          {seen_i, AttrType::kInt},
          {seen_s, AttrType::kString},
          {seen_t, AttrType::kTensor},
          {seen_g, AttrType::kGraph},
          {seen_sp, AttrType::kSparseTensor},
          {seen_tp, AttrType::kTypeProto},
          {!a.floats.empty(), AttrType::kFloats},
          {!a.ints.empty(), AttrType::kInts},
          {!a.strings.empty(), AttrType::kStrings},
          {!a.tensors.empty(), AttrType::kTensors},
          {!a.graphs.empty(), AttrType::kGraphs},
          {!a.sparse_tensors.empty(), AttrType::kSparseTensors},
          {!a.type_protos.empty(), AttrType::kTypeProtos}};
      const std::string where = "attribute " + quoted(a.name);
      std::optional<AttrType> set;
      for (const auto& [present, kind] : fields) {
        if (!present) continue;
        if (has_type && kind != a.type) {
          throw ParseError(where, "has type " + std::string(attrTypeName(a.type)) + " but a " +
                                      std::string(attrTypeName(kind)) + " value");
        }
        if (set) {
          throw ParseError(where, "has more than one value (" + std::string(attrTypeName(*set)) +
                                      " and " + std::string(attrTypeName(kind)) + ")");
        }
        set = kind;
      }
      const bool needs_value = a.type == AttrType::kTensor || a.type == AttrType::kGraph ||
                               a.type == AttrType::kSparseTensor;
      if (has_type && needs_value && !set) {
        throw ParseError(where, "has type " + std::string(attrTypeName(a.type)) + " but no value");
      }
    }
    if (!has_type) {
      // IR version 1 had no type field: infer it from the field that is set.
      a.type = seen_f                      ? AttrType::kFloat
               : seen_i                    ? AttrType::kInt
               : seen_s                    ? AttrType::kString
               : seen_t                    ? AttrType::kTensor
               : seen_g                    ? AttrType::kGraph
               : seen_sp                   ? AttrType::kSparseTensor
               : seen_tp                   ? AttrType::kTypeProto
               : !a.floats.empty()         ? AttrType::kFloats
               : !a.ints.empty()           ? AttrType::kInts
               : !a.strings.empty()        ? AttrType::kStrings
               : !a.tensors.empty()        ? AttrType::kTensors
               : !a.graphs.empty()         ? AttrType::kGraphs
               : !a.sparse_tensors.empty() ? AttrType::kSparseTensors
               : !a.type_protos.empty()    ? AttrType::kTypeProtos
                                           : AttrType::kUndefined;
    }
    return a;
  }

  PendingNode readNode(std::string_view data, Graph& g, size_t index, int depth,
                       std::vector<std::pair<Graph*, PendingGraph>>& subgraphs) {
    PendingNode p;
    p.index = index;
    p.node.reset(g.createNode(GraphBuilder::key(), "", {}, 0));
    Node& n = *p.node;
    FieldReader f(data, "NodeProto", proto::kNodeFields);
    std::vector<std::string_view> attr_bytes;
    while (f.next()) {
      switch (static_cast<proto::NodeField>(f.tag())) {
        case proto::NodeField::kInput:
          p.inputs.push_back(f.getString());
          break;
        case proto::NodeField::kOutput:
          p.outputs.push_back(f.getString());
          break;
        case proto::NodeField::kName:
          n.name = f.getString();
          break;
        case proto::NodeField::kOpType:
          n.op_type = f.getString();
          break;
        case proto::NodeField::kAttribute:
          attr_bytes.push_back(f.getBytes());
          break;
        case proto::NodeField::kDocString:
          n.doc_string = f.getString();
          break;
        case proto::NodeField::kDomain:
          n.domain = f.getString();
          break;
        case proto::NodeField::kOverload:
          n.overload = f.getString();
          break;
        case proto::NodeField::kMetadataProps:
          n.metadata_props.push_back(readStringPair(f.getBytes()));
          break;
        case proto::NodeField::kDeviceConfigurations:
          n.device_configurations.push_back(f.getString());
          break;
        default:
          f.keepUnknown(n.unknown_fields);
          break;
      }
    }
    // Attributes last, so errors inside them can name the node.
    try {
      if (n.op_type.empty()) throw ParseError("", "node has no op_type");
      for (std::string_view ab : attr_bytes) {
        Attribute a = readAttribute(ab, g, &n, depth, subgraphs);
        if (n.attr(a.name) != nullptr) {
          throw ParseError("attribute " + quoted(a.name), "attribute given twice");
        }
        n.attributes.push_back(std::move(a));
      }
    } catch (const ParseError& e) {
      throw e.within(nodeLabel(n, index));
    }
    if (!n.name.empty()) g.reserveName(n.name);
    return p;
  }

  static std::string nodeLabel(const Node& n, size_t index) {
    std::string s = "node " + std::to_string(index);
    if (!n.name.empty()) s += " " + quoted(n.name);
    if (!n.op_type.empty()) s += " (" + n.op_type + ")";
    return s;
  }

  // ------------------------------------------------------------ graphs

  void parseGraph(std::string_view data, Graph& g, PendingGraph& pg, int depth, const char* what) {
    if (depth > kMaxNesting) throw ParseError(what, "subgraphs nested too deeply");
    std::vector<std::pair<Graph*, PendingGraph>> subgraphs;  // linked when g is
    FieldReader f(data, "GraphProto", proto::kGraphFields);
    std::vector<std::string_view> node_bytes;
    while (f.next()) {
      switch (static_cast<proto::GraphField>(f.tag())) {
        case proto::GraphField::kNode:
          node_bytes.push_back(f.getBytes());
          break;
        case proto::GraphField::kName:
          g.name = f.getString();
          break;
        case proto::GraphField::kInitializer:
          pg.initializers.push_back(readTensor(f.getBytes()));
          break;
        case proto::GraphField::kSparseInitializer:
          pg.sparse_initializers.push_back(readSparseTensor(f.getBytes()));
          break;
        case proto::GraphField::kDocString:
          g.doc_string = f.getString();
          break;
        case proto::GraphField::kInput:
          pg.inputs.push_back(readValueInfo(f.getBytes()));
          break;
        case proto::GraphField::kOutput:
          pg.outputs.push_back(readValueInfo(f.getBytes()));
          break;
        case proto::GraphField::kValueInfo:
          pg.value_info.push_back(readValueInfo(f.getBytes()));
          break;
        case proto::GraphField::kQuantizationAnnotation:
          g.quantization_annotation.push_back(f.getString());
          break;
        case proto::GraphField::kMetadataProps:
          g.metadata_props.push_back(readStringPair(f.getBytes()));
          break;
        default:
          f.keepUnknown(g.unknown_fields);
          break;
      }
    }
    const std::string label = std::string(what) + " " + quoted(g.name);
    try {
      pg.nodes.reserve(node_bytes.size());
      for (size_t i = 0; i < node_bytes.size(); ++i) {
        pg.nodes.push_back(readNode(node_bytes[i], g, i, depth, subgraphs));
      }
    } catch (const ParseError& e) {
      throw e.within(label);
    }
    for (auto& [sg, spg] : subgraphs)
      pending_subgraphs_.emplace(sg, std::move(spg));
  }

  // Names a pending graph uses but does not define (its implicit captures).
  void freeNames(Graph* g, const PendingGraph& pg, std::unordered_set<std::string>& out) {
    std::unordered_set<std::string_view> defined;
    for (const auto& v : pg.inputs)
      defined.insert(v.name);
    for (const auto& t : pg.initializers)
      defined.insert(t.name);
    for (const auto& s : pg.fn_inputs)
      defined.insert(s);
    for (const auto& pn : pg.nodes) {
      for (const auto& o : pn.outputs)
        defined.insert(o);
    }
    std::unordered_set<std::string> used;
    for (const auto& pn : pg.nodes) {
      for (const auto& in : pn.inputs) {
        if (!in.empty()) used.insert(in);
      }
      pn.node->forEachSubgraph([&](Graph& sg) { subgraphFree(sg, used); });
    }
    for (const auto& o : pg.outputs)
      used.insert(o.name);
    for (const auto& s : used) {
      if (!defined.count(s)) out.insert(s);
    }
    (void)g;
  }

  void subgraphFree(Graph& sg, std::unordered_set<std::string>& out) {
    auto it = pending_subgraphs_.find(&sg);
    if (it != pending_subgraphs_.end()) freeNames(&sg, it->second, out);
  }

  // Puts the nodes of `pg` in an order where every name is defined before use.
  void sortNodes(PendingGraph& pg, const std::string& label) {
    std::unordered_map<std::string_view, size_t> producer;
    producer.reserve(pg.nodes.size());
    for (size_t i = 0; i < pg.nodes.size(); ++i) {
      for (const auto& o : pg.nodes[i].outputs) {
        if (!o.empty()) producer.emplace(o, i);
      }
    }
    const size_t n = pg.nodes.size();
    // The names node i reads: its inputs, and what its subgraphs capture. Plain nodes need no
    // set (a million of them would each allocate one).
    auto forEachName = [&](size_t i, const auto& f) {
      const PendingNode& pn = pg.nodes[i];
      if (!pn.node->hasSubgraphs()) {
        for (const auto& s : pn.inputs)
          f(std::string_view(s));
        return;
      }
      std::unordered_set<std::string> names(pn.inputs.begin(), pn.inputs.end());
      pn.node->forEachSubgraph([&](Graph& sg) { subgraphFree(sg, names); });
      for (const auto& s : names)
        f(std::string_view(s));
    };
    bool sorted = true;
    for (size_t i = 0; i < n && sorted; ++i) {
      forEachName(i, [&](std::string_view s) {
        auto it = producer.find(s);
        if (it != producer.end() && it->second > i) sorted = false;
      });
    }
    if (sorted) return;
    std::vector<std::vector<size_t>> deps(n);
    for (size_t i = 0; i < n; ++i) {
      forEachName(i, [&](std::string_view s) {
        auto it = producer.find(s);
        if (it != producer.end() && it->second != i) deps[i].push_back(it->second);
      });
    }
    // Kahn's algorithm, smallest file position first, so a sorted prefix keeps its order.
    std::vector<size_t> pending(n, 0);
    std::vector<std::vector<size_t>> users(n);
    for (size_t i = 0; i < n; ++i) {
      std::sort(deps[i].begin(), deps[i].end());
      deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
      pending[i] = deps[i].size();
      for (size_t d : deps[i])
        users[d].push_back(i);
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
    for (size_t i = 0; i < n; ++i) {
      if (pending[i] == 0) ready.push(i);
    }
    std::vector<size_t> order;
    order.reserve(n);
    while (!ready.empty()) {
      const size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t u : users[i]) {
        if (--pending[u] == 0) ready.push(u);
      }
    }
    if (order.size() != n) {
      for (size_t i = 0; i < n; ++i) {
        if (pending[i] != 0) {
          throw ParseError(label, "the nodes form a cycle (" +
                                      nodeLabel(*pg.nodes[i].node, pg.nodes[i].index) +
                                      " depends on its own output)");
        }
      }
    }
    std::vector<PendingNode> nodes;
    nodes.reserve(n);
    for (size_t i : order)
      nodes.push_back(std::move(pg.nodes[i]));
    pg.nodes = std::move(nodes);
  }

  void defineOrFail(Graph& g, const std::string& name, const std::string& label,
                    const std::string& what) {
    if (name.empty()) throw ParseError(label, what + " has an empty name");
    if (g.lookupLocal(name) != nullptr) {
      throw ParseError(label, what + " " + quoted(name) + " is defined twice");
    }
  }

  void applyInfo(Value* v, ValueInfoRec& vi) {
    v->type = std::move(vi.type);
    v->doc_string = std::move(vi.doc_string);
    v->metadata_props = std::move(vi.metadata_props);
    v->value_info_unknown_fields = std::move(vi.unknown_fields);
  }

  void linkGraph(Graph& g, PendingGraph& pg, const std::string& label) {
    g.reserveValues(pg.initializers.size() + pg.inputs.size() + pg.nodes.size());
    // Initializers, then inputs (an input may name an initializer: an overridable default).
    for (Tensor& t : pg.initializers) {
      defineOrFail(g, t.name, label, "initializer");
      g.addInitializer(GraphBuilder::key(), std::move(t));
    }
    for (size_t i = 0; i < pg.sparse_initializers.size(); ++i) {
      SparseTensor& s = pg.sparse_initializers[i];
      const std::string name = s.values.name;
      defineOrFail(g, name, label, "sparse initializer");
      g.addSparseInitializer(GraphBuilder::key(), name, std::move(s));
    }
    for (ValueInfoRec& vi : pg.inputs) {
      Value* existing = g.lookupLocal(vi.name);
      if (existing != nullptr && (existing->isInitializer() || existing->isSparseInitializer()) &&
          !existing->isGraphInput()) {
        g.addInputForInitializer(GraphBuilder::key(), existing);
        applyInfo(existing, vi);
        continue;
      }
      defineOrFail(g, vi.name, label, "graph input");
      Value* v = g.addInput(GraphBuilder::key(), vi.name, Type());
      applyInfo(v, vi);
    }
    for (const std::string& name : pg.fn_inputs) {
      defineOrFail(g, name, label, "function input");
      g.addInput(GraphBuilder::key(), name, Type());
    }

    sortNodes(pg, label);
    for (PendingNode& pn : pg.nodes) {
      Node* n = pn.node.get();
      // Built on the error path only: a label per node is a million strings for a big graph.
      auto node_label = [&] { return label + " > " + nodeLabel(*n, pn.index); };
      // Resolve every input before touching the graph, so a failure leaves no half-linked node.
      std::vector<Value*> ins;
      ins.reserve(pn.inputs.size());
      for (size_t i = 0; i < pn.inputs.size(); ++i) {
        if (pn.inputs[i].empty()) {
          ins.push_back(nullptr);
          continue;
        }
        Value* v = g.lookup(pn.inputs[i]);
        if (v == nullptr) {
          throw ParseError(node_label(), "input " + std::to_string(i) + " " + quoted(pn.inputs[i]) +
                                             " is not defined by any node, input or initializer");
        }
        ins.push_back(v);
      }
      for (size_t i = 0; i < pn.outputs.size(); ++i) {
        const std::string& o = pn.outputs[i];
        if (o.empty()) continue;
        if (g.lookupLocal(o) != nullptr) {
          throw ParseError(node_label(), "output " + quoted(o) + " is defined twice (not SSA)");
        }
        for (size_t k = 0; k < i; ++k) {
          if (pn.outputs[k] == o) {
            throw ParseError(node_label(), "output " + quoted(o) + " is listed twice");
          }
        }
      }
      for (const std::string& o : pn.outputs)
        n->addOutputExact(GraphBuilder::key(), o);
      for (Value* v : ins)
        n->addInput(GraphBuilder::key(), v);
      g.appendNode(GraphBuilder::key(), pn.node.release());
      // Subgraphs see everything defined so far, including this node's inputs.
      try {
        n->forEachSubgraph([&](Graph& sg) {
          auto it = pending_subgraphs_.find(&sg);
          if (it == pending_subgraphs_.end()) return;
          PendingGraph spg = std::move(it->second);
          pending_subgraphs_.erase(it);
          linkGraph(sg, spg, "subgraph " + quoted(sg.name));
        });
      } catch (const ParseError& e) {
        throw e.within(node_label());
      }
    }

    // value_info: types of intermediate values; entries naming nothing are kept aside.
    for (ValueInfoRec& vi : pg.value_info) {
      Value* v = g.lookupLocal(vi.name);
      if (v == nullptr || v->in_value_info) {
        g.orphan_value_info.push_back({vi.name, std::move(vi.type), std::move(vi.doc_string),
                                       std::move(vi.metadata_props), std::move(vi.unknown_fields)});
        continue;
      }
      v->in_value_info = true;
      applyInfo(v, vi);
    }
    for (ValueInfoRec& vi : pg.outputs) {
      Value* v = g.lookup(vi.name);
      if (v == nullptr) {
        throw ParseError(label, "graph output " + quoted(vi.name) +
                                    " is not produced by any node, input or initializer");
      }
      if (v->graph() == &g && !v->isGraphOutput() && !v->in_value_info && !v->isGraphInput()) {
        applyInfo(v, vi);
      }
      g.addOutput(GraphBuilder::key(), v);
    }
    for (const std::string& name : pg.fn_outputs) {
      Value* v = g.lookup(name);
      if (v == nullptr) {
        throw ParseError(label, "function output " + quoted(name) + " is not produced by any node");
      }
      g.addOutput(GraphBuilder::key(), v);
    }
  }

  // ------------------------------------------------------------ training info, functions

  TrainingInfo readTrainingInfo(std::string_view data, Graph& main) {
    TrainingInfo t;
    FieldReader f(data, "TrainingInfoProto", proto::kTrainingFields);
    auto graph = [&](std::string_view bytes, const char* what) {
      // Training graphs may use the main graph's initializers: main is their parent scope.
      auto g = std::make_unique<Graph>(&main, nullptr);
      PendingGraph pg;
      parseGraph(bytes, *g, pg, 1, what);
      linkGraph(*g, pg, std::string(what) + " " + quoted(g->name));
      return g;
    };
    while (f.next()) {
      switch (f.tag()) {
        case 1:
          t.initialization = graph(f.getBytes(), "training initialization graph");
          break;
        case 2:
          t.algorithm = graph(f.getBytes(), "training algorithm graph");
          break;
        case 3:
          t.initialization_binding.push_back(readStringPair(f.getBytes()));
          break;
        case 4:
          t.update_binding.push_back(readStringPair(f.getBytes()));
          break;
        default:
          f.keepUnknown(t.unknown_fields);
          break;
      }
    }
    return t;
  }

  Function readFunction(std::string_view data, size_t index) {
    Function fn;
    fn.body = std::make_unique<Graph>();
    PendingGraph pg;
    pg.is_function = true;
    std::vector<std::pair<Graph*, PendingGraph>> subgraphs;
    std::vector<std::string_view> node_bytes, attr_bytes;
    FieldReader f(data, "FunctionProto", proto::kFunctionFields);
    while (f.next()) {
      switch (f.tag()) {
        case 1:
          fn.name = f.getString();
          break;
        case 4:
          pg.fn_inputs.push_back(f.getString());
          break;
        case 5:
          pg.fn_outputs.push_back(f.getString());
          break;
        case 6:
          fn.attribute_names.push_back(f.getString());
          break;
        case 11:
          attr_bytes.push_back(f.getBytes());
          break;
        case 7:
          node_bytes.push_back(f.getBytes());
          break;
        case 8:
          fn.doc_string = f.getString();
          break;
        case 9:
          fn.opset_import.push_back(readOpset(f.getBytes()));
          break;
        case 10:
          fn.domain = f.getString();
          break;
        case 13:
          fn.overload = f.getString();
          break;
        case 12:
          pg.value_info.push_back(readValueInfo(f.getBytes()));
          break;
        case 14:
          fn.metadata_props.push_back(readStringPair(f.getBytes()));
          break;
        default:
          f.keepUnknown(fn.unknown_fields);
          break;
      }
    }
    const std::string label = "function " + std::to_string(index) + " " + quoted(fn.name);
    try {
      for (std::string_view ab : attr_bytes) {
        fn.attribute_defaults.push_back(readAttribute(ab, *fn.body, nullptr, 0, subgraphs));
      }
      for (size_t i = 0; i < node_bytes.size(); ++i) {
        pg.nodes.push_back(readNode(node_bytes[i], *fn.body, i, 0, subgraphs));
      }
      for (auto& [sg, spg] : subgraphs)
        pending_subgraphs_.emplace(sg, std::move(spg));
      linkGraph(*fn.body, pg, "body");
    } catch (const ParseError& e) {
      throw e.within(label);
    }
    return fn;
  }

  const Buffer& bytes_;
  const ReadOptions& options_;
  std::string_view graph_bytes_;
  std::vector<std::string_view> training_bytes_;
  std::vector<std::string_view> function_bytes_;
  std::unordered_map<Graph*, PendingGraph> pending_subgraphs_;
};

}  // namespace

void checkExternalLocation(const std::string& location, const std::string& where) {
  auto bad = [&](const std::string& why) {
    throw ParseError(where, "external data location '" + location + "' " + why);
  };
  if (location.empty()) bad("is empty");
  if (location[0] == '/' || location[0] == '\\')
    bad("is absolute; it must be relative to the model's folder");
  if (location.size() > 1 && location[1] == ':') bad("has a drive letter; it must be relative");
  if (location.find('\\') != std::string::npos) bad("contains a backslash");
  if (location.find('\0') != std::string::npos) bad("contains a NUL byte");
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0 && end - start == 2) {
      bad("contains '..'; it must stay inside the model's folder");
    }
    start = end + 1;
  }
}

std::unique_ptr<Model> readModel(const Buffer& bytes, const ReadOptions& options) {
  Reader r(bytes, options);
  return r.run();
}

Tensor readTensorProto(const Buffer& bytes) {
  ReadOptions options;
  Reader r(bytes, options);
  return r.tensorProto();
}

}  // namespace onnxfold
