#include "schema/op_schema.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <tuple>

#include "ir/dtype.h"
#include "ir/error.h"

namespace onnxfold {

namespace {

const char kTable[] =
#include "schema/onnx_op_schemas.inc"
    ;

std::string_view domainKey(std::string_view d) {
  return d == "ai.onnx" ? std::string_view() : d;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

int toInt(std::string_view s) {
  return std::atoi(std::string(s).c_str());
}

// "name:T?*~" -> a formal parameter bound to the constraint named T.
FormalParameter parseFormal(std::string_view item, const std::vector<TypeConstraint>& types) {
  const size_t colon = item.find(':');
  FormalParameter f;
  f.name = std::string(item.substr(0, colon));
  std::string_view t = item.substr(colon + 1);
  while (!t.empty() && (t.back() == '?' || t.back() == '*' || t.back() == '~')) {
    f.optional |= t.back() == '?';
    f.variadic |= t.back() == '*';
    f.heterogeneous |= t.back() == '~';
    t.remove_suffix(1);
  }
  f.type = -1;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i].name == t) f.type = static_cast<int>(i);
  }
  if (f.type < 0) throw Error("op schema table: no type constraint '" + std::string(t) + "'");
  return f;
}

// "-1", "1e-05", "nearest": the default of an INT, FLOAT or STRING attribute.
AttributeDefault parseDefault(AttrType type, std::string_view text, const OpSchema& s,
                              const std::string& attr) {
  AttributeDefault d;
  d.type = type;
  const std::string str(text);
  char* end = nullptr;
  errno = 0;
  switch (type) {
    case AttrType::kInt:
      d.i = std::strtoll(str.c_str(), &end, 10);
      break;
    case AttrType::kFloat:
      d.f = std::strtof(str.c_str(), &end);
      break;
    case AttrType::kString:
      d.s = str;
      return d;
    default:
      end = nullptr;
      break;
  }
  if (end == nullptr || str.empty() || *end != '\0' || errno == ERANGE) {
    throw Error("op schema table: " + s.op_type + "-" + std::to_string(s.since_version) +
                " attribute '" + attr + "': cannot read the default '" + str + "'");
  }
  return d;
}

OpSchema parseLine(std::string_view line) {
  const std::vector<std::string_view> f = split(line, '\t');
  if (f.size() != 12)
    throw Error("op schema table: a line has " + std::to_string(f.size()) + " fields");
  OpSchema s;
  s.domain = std::string(f[0]);
  s.op_type = std::string(f[1]);
  s.since_version = toInt(f[2]);
  s.deprecated = f[3] == "1";
  s.min_inputs = toInt(f[4]);
  s.max_inputs = toInt(f[5]);
  s.min_outputs = toInt(f[6]);
  s.max_outputs = toInt(f[7]);
  for (std::string_view a : split(f[8], ',')) {
    const size_t colon = a.find(':');
    AttributeSchema as;
    as.name = std::string(a.substr(0, colon));
    std::string_view code = a.substr(colon + 1);
    const size_t eq = code.find('=');
    std::string_view dflt;
    if (eq != std::string_view::npos) {
      dflt = code.substr(eq + 1);
      code = code.substr(0, eq);
    }
    as.required = !code.empty() && code.back() == '!';
    if (as.required) code.remove_suffix(1);
    as.type = static_cast<AttrType>(toInt(code));
    if (eq != std::string_view::npos) as.default_value = parseDefault(as.type, dflt, s, as.name);
    s.attributes.push_back(std::move(as));
  }
  for (std::string_view t : split(f[11], ',')) {
    const size_t eq = t.find('=');
    TypeConstraint c;
    c.name = std::string(t.substr(0, eq));
    const std::vector<std::string_view> masks = split(t.substr(eq + 1), '/');
    for (size_t i = 0; i < masks.size() && i < 4; ++i)
      c.masks[i] = static_cast<uint32_t>(std::strtoul(std::string(masks[i]).c_str(), nullptr, 16));
    s.types.push_back(std::move(c));
  }
  for (std::string_view p : split(f[9], ','))
    s.inputs.push_back(parseFormal(p, s.types));
  for (std::string_view p : split(f[10], ','))
    s.outputs.push_back(parseFormal(p, s.types));
  return s;
}

bool bit(uint32_t mask, DataType t) {
  const auto i = static_cast<int32_t>(t);
  return i > 0 && i < 32 && (mask >> i) & 1u;
}

}  // namespace

bool TypeConstraint::allows(const Type& t) const {
  switch (t.kind) {
    case Type::Kind::kTensor:
      // A tensor of unknown element type is not a contradiction.
      return t.elem_type == DataType::kUndefined || bit(masks[0], t.elem_type);
    case Type::Kind::kSequence:
      if (masks[1] == 0) return false;
      return !t.elem || !t.elem->isTensor() || t.elem->elem_type == DataType::kUndefined ||
             bit(masks[1], t.elem->elem_type);
    case Type::Kind::kOptional: {
      if (masks[2] == 0 && masks[3] == 0) return false;
      if (!t.elem) return true;
      if (t.elem->kind == Type::Kind::kTensor) {
        return t.elem->elem_type == DataType::kUndefined || bit(masks[2], t.elem->elem_type);
      }
      if (t.elem->kind == Type::Kind::kSequence) {
        return !t.elem->elem || t.elem->elem->elem_type == DataType::kUndefined ||
               bit(masks[3], t.elem->elem->elem_type);
      }
      return true;
    }
    default:
      return true;  // sparse tensors, maps, unknown: not checked here
  }
}

std::string TypeConstraint::describe() const {
  static const char* const kWrap[4][2] = {{"tensor(", ")"},
                                          {"seq(tensor(", "))"},
                                          {"optional(tensor(", "))"},
                                          {"optional(seq(tensor(", ")))"}};
  std::string out;
  for (int k = 0; k < 4; ++k) {
    for (int32_t i = 1; i <= kMaxDataType; ++i) {
      if (!((masks[k] >> i) & 1u)) continue;
      if (!out.empty()) out += ", ";
      out += kWrap[k][0] + std::string(dataTypeProtoName(static_cast<DataType>(i))) + kWrap[k][1];
    }
  }
  return out;
}

const AttributeSchema* OpSchema::attribute(std::string_view name) const {
  for (const AttributeSchema& a : attributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const FormalParameter* OpSchema::formal(const std::vector<FormalParameter>& v, size_t i) {
  if (i < v.size()) return &v[i];
  if (!v.empty() && v.back().variadic) return &v.back();
  return nullptr;
}

const OpSchemas& OpSchemas::instance() {
  static const OpSchemas schemas;
  return schemas;
}

OpSchemas::OpSchemas() {
  for (std::string_view line : split(kTable, '\n')) {
    if (!line.empty()) schemas_.push_back(parseLine(line));
  }
  std::sort(schemas_.begin(), schemas_.end(), [](const OpSchema& a, const OpSchema& b) {
    return std::tie(a.domain, a.op_type, a.since_version) <
           std::tie(b.domain, b.op_type, b.since_version);
  });
  for (const OpSchema& s : schemas_) {
    if (newest_.empty() || newest_.back().first != s.domain) newest_.push_back({s.domain, 0});
    newest_.back().second = std::max(newest_.back().second, s.since_version);
  }
}

const OpSchema* OpSchemas::find(std::string_view domain, std::string_view op_type,
                                int64_t opset) const {
  domain = domainKey(domain);
  // The last version at or before `opset`.
  auto it = std::upper_bound(
      schemas_.begin(), schemas_.end(), std::make_tuple(domain, op_type, opset),
      [](const auto& key, const OpSchema& s) {
        return std::make_tuple(std::get<0>(key), std::get<1>(key), std::get<2>(key)) <
               std::make_tuple(std::string_view(s.domain), std::string_view(s.op_type),
                               static_cast<int64_t>(s.since_version));
      });
  if (it == schemas_.begin()) return nullptr;
  --it;
  return it->domain == domain && it->op_type == op_type ? &*it : nullptr;
}

const OpSchema* OpSchemas::first(std::string_view domain, std::string_view op_type) const {
  domain = domainKey(domain);
  for (const OpSchema& s : schemas_) {
    if (s.domain == domain && s.op_type == op_type) return &s;  // sorted: the oldest first
  }
  return nullptr;
}

bool OpSchemas::knowsDomain(std::string_view domain) const {
  return newestOpset(domain) > 0;
}

int OpSchemas::newestOpset(std::string_view domain) const {
  domain = domainKey(domain);
  for (const auto& [d, newest] : newest_) {
    if (d == domain) return newest;
  }
  return 0;
}

}  // namespace onnxfold
