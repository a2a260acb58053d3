#include "onnx/skeleton.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ir/error.h"
#include "onnx/wire.h"

namespace onnxfold {

namespace {

// Message types on the paths from ModelProto to a TensorProto.
enum class Msg { kModel, kGraph, kNode, kAttribute, kFunction, kTraining, kTensor, kSparse };

const char* nameOf(Msg m) {
  switch (m) {
    case Msg::kModel:
      return "ModelProto";
    case Msg::kGraph:
      return "GraphProto";
    case Msg::kNode:
      return "NodeProto";
    case Msg::kAttribute:
      return "AttributeProto";
    case Msg::kFunction:
      return "FunctionProto";
    case Msg::kTraining:
      return "TrainingInfoProto";
    case Msg::kTensor:
      return "TensorProto";
    case Msg::kSparse:
      return "SparseTensorProto";
  }
  return "?";
}

// The submessage type of field `field` of `m`, when it can hold tensors.
bool child(Msg m, uint32_t field, Msg* out) {
  auto is = [&](Msg c) {
    *out = c;
    return true;
  };
  switch (m) {
    case Msg::kModel:
      if (field == 7) return is(Msg::kGraph);      // graph
      if (field == 20) return is(Msg::kTraining);  // training_info
      if (field == 25) return is(Msg::kFunction);  // functions
      return false;
    case Msg::kGraph:
      if (field == 1) return is(Msg::kNode);     // node
      if (field == 5) return is(Msg::kTensor);   // initializer
      if (field == 15) return is(Msg::kSparse);  // sparse_initializer
      return false;
    case Msg::kNode:
      return field == 5 && is(Msg::kAttribute);  // attribute
    case Msg::kAttribute:
      if (field == 5 || field == 10) return is(Msg::kTensor);   // t, tensors
      if (field == 6 || field == 11) return is(Msg::kGraph);    // g, graphs
      if (field == 22 || field == 23) return is(Msg::kSparse);  // sparse_tensor(s)
      return false;
    case Msg::kFunction:
      return field == 7 && is(Msg::kNode);  // node
    case Msg::kTraining:
      return (field == 1 || field == 2) && is(Msg::kGraph);  // initialization, algorithm
    case Msg::kSparse:
      return (field == 1 || field == 2) && is(Msg::kTensor);  // values, indices
    case Msg::kTensor:
      return false;
  }
  return false;
}

// Subgraphs nested deeper than this are refused (readModel refuses past 64 itself); each
// level is a few messages (graph > node > attribute), so the recursion stays bounded.
constexpr int kMaxGraphNesting = 66;

class Scanner {
 public:
  Scanner(const Source& src, uint64_t threshold) : src_(src), threshold_(threshold) {}

  // Encodes the fields of message `m` in [pos, end) of the source into `dst`; `depth`
  // counts the graphs around it.
  void message(Msg m, uint64_t pos, uint64_t end, std::string& dst, int depth) {
    if (depth > kMaxGraphNesting) throw ParseError(nameOf(m), "subgraphs nested too deeply");
    while (pos < end) {
      // Keys and varints are copied as they are, not re-encoded: the reader keeps unknown
      // fields byte for byte, non-canonical varints included, and so must the skeleton.
      const uint64_t key_at = pos;
      const uint64_t key = varint(pos, end, m);
      const uint32_t field = static_cast<uint32_t>(key >> 3);
      const auto wire = static_cast<unsigned>(key & 7);
      if (field == 0) throw ParseError(nameOf(m), "bad field key: field number 0");
      copy(key_at, pos - key_at, dst);
      switch (wire) {
        case 0: {  // varint
          const uint64_t at = pos;
          varint(pos, end, m);
          copy(at, pos - at, dst);
          break;
        }
        case 1:    // fixed64
        case 5: {  // fixed32
          const uint64_t n = wire == 1 ? 8 : 4;
          if (end - pos < n) throw ParseError(nameOf(m), "a fixed-size field runs past its end");
          copy(pos, n, dst);
          pos += n;
          break;
        }
        case 2: {  // length-delimited
          const uint64_t len_at = pos;
          const uint64_t len = varint(pos, end, m);
          const uint64_t len_bytes = pos - len_at;
          if (len > end - pos) {
            throw ParseError(nameOf(m), "field " + std::to_string(field) + " has length " +
                                            std::to_string(len) + ", past the end of its message");
          }
          Msg sub;
          if (child(m, field, &sub)) {
            std::string inner;
            const size_t mark = pending_.size();
            message(sub, pos, pos + len, inner, sub == Msg::kGraph ? depth + 1 : depth);
            wire::appendVarint(dst, inner.size());
            // Payloads emptied inside `inner` were placed relative to it.
            for (size_t i = mark; i < pending_.size(); ++i)
              pending_[i].at += dst.size();
            dst += inner;
          } else if (m == Msg::kTensor && field == 9 && len >= threshold_) {
            wire::appendVarint(dst, 0);  // raw_data left in the file
            pending_.push_back({dst.size(), pos, len});
          } else {
            copy(len_at, len_bytes + len, dst);  // prefix and content as they are
          }
          pos += len;
          break;
        }
        default:
          throw ParseError(nameOf(m), "bad field key: wire type " + std::to_string(wire));
      }
    }
  }

  // An emptied payload: its offset in the string of the message being encoded (moved to
  // the parent's frame when that message is appended to it), and where it is in the source.
  struct Pending {
    size_t at;
    uint64_t offset, length;
  };
  std::vector<Pending> pending_;

  // Buffered reads through the source (sequential, 16 KiB at a time; payloads left in the
  // file are skipped).
  uint8_t byte(uint64_t pos) {
    if (pos < buf_start_ || pos >= buf_start_ + buf_.size()) {
      const uint64_t n = std::min<uint64_t>(kBuf, src_.size() - pos);
      buf_.resize(static_cast<size_t>(n));
      src_.read(pos, buf_.size(), buf_.data());
      buf_start_ = pos;
    }
    return buf_[static_cast<size_t>(pos - buf_start_)];
  }

 private:
  // Small: a refill may read into a payload it then skips.
  static constexpr uint64_t kBuf = 16 << 10;

  uint64_t varint(uint64_t& pos, uint64_t end, Msg m) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= end) throw ParseError(nameOf(m), "truncated varint");
      const uint8_t b = byte(pos++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw ParseError(nameOf(m), "varint longer than 10 bytes");
  }

  void copy(uint64_t pos, uint64_t n, std::string& dst) {
    const size_t at = dst.size();
    dst.resize(at + static_cast<size_t>(n));
    // Through the buffer when it holds the bytes (small fields), else straight from the source.
    if (pos >= buf_start_ && pos + n <= buf_start_ + buf_.size()) {
      std::copy_n(buf_.data() + (pos - buf_start_), n, reinterpret_cast<uint8_t*>(&dst[at]));
    } else {
      src_.read(pos, static_cast<size_t>(n), reinterpret_cast<uint8_t*>(&dst[at]));
    }
  }

  const Source& src_;
  uint64_t threshold_;
  std::vector<uint8_t> buf_;
  uint64_t buf_start_ = 0;
};

}  // namespace

Skeleton readSkeleton(std::shared_ptr<const Source> model, uint64_t threshold) {
  Skeleton s;
  s.source = model;
  Scanner scan(*model, threshold);
  std::string bytes;
  scan.message(Msg::kModel, 0, model->size(), bytes, 0);
  for (const auto& p : scan.pending_)
    s.elided.emplace(p.at, std::make_pair(p.offset, p.length));
  uint8_t* p = nullptr;
  s.bytes = Buffer::allocateUninitialized(bytes.size(), &p);
  std::copy(bytes.begin(), bytes.end(), p);
  return s;
}

}  // namespace onnxfold
