#include "passes/float16_policy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "ir/error.h"
#include "kernels/cast.h"
#include "kernels/common.h"

namespace onnxfold {

namespace {

// Why each op of the default block list stays float32.
struct BlockRule {
  const char* op;
  const char* why;
};
const BlockRule kBlockList[] = {
    {"Softmax", "exp overflows float16"},
    {"LogSoftmax", "exp overflows float16"},
    {"Exp", "exp overflows float16"},
    {"Pow", "powers overflow float16"},
    {"Range", "float16 counts are exact only to 2048"},
    {"CumSum", "running sums overflow float16"},
    {"ReduceProd", "products overflow float16"},
    {"ReduceSumSquare", "sums of squares overflow float16"},
    {"ReduceL2", "sums of squares overflow float16"},
    {"ReduceLogSumExp", "exp overflows float16"},
};

// Steps that stay in a float32 island when they read only its results and constants.
const char kIslandSteps[] =
    " ReduceMean ReduceSum ReduceSumSquare ReduceL1 ReduceL2 ReduceMax ReduceMin ReduceLogSum Add "
    "Sub Mul Div Sqrt Reciprocal Neg Abs Log Max Min ";

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Weights from this size are converted when written, not held twice in memory.
constexpr size_t kLazyBytes = 64 << 10;

// A float32 weight read as float16, computed chunk by chunk when read (the writer reads it
// once), so a multi-GB decoder is never held in memory twice.
class HalfOfFloat : public Source {
 public:
  explicit HalfOfFloat(Tensor f32) : f32_(std::move(f32)) {}
  uint64_t size() const override { return static_cast<uint64_t>(f32_.numElements()) * 2; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    // 8 MiB of floats per source read: the writer asks for 4 MiB of float16 at a time, so
    // that is one read of a file-backed weight, which matters where a read has a high fixed
    // cost (FileReaderSync in a browser Worker).
    constexpr size_t kChunk = 2 << 20;
    uint64_t first = offset / 2;
    const uint64_t end = (offset + n + 1) / 2;
    const auto most = static_cast<size_t>(std::min<uint64_t>(kChunk, end - first));
    std::vector<float> in(most);
    std::vector<uint16_t> out(most);
    while (first < end) {
      const auto count = static_cast<size_t>(std::min<uint64_t>(kChunk, end - first));
      f32_.buffer().copyTo(first * 4, count * 4, reinterpret_cast<uint8_t*>(in.data()));
      kernels::floatToHalfSaturatedHwy(in.data(), out.data(), count);
      // The requested bytes of this chunk: [offset, offset + n) in float16 bytes.
      const uint64_t lo = std::max<uint64_t>(offset, first * 2);
      const uint64_t hi = std::min<uint64_t>(offset + n, (first + count) * 2);
      std::memcpy(dst + (lo - offset),
                  reinterpret_cast<const uint8_t*>(out.data()) + (lo - first * 2),
                  static_cast<size_t>(hi - lo));
      first += count;
    }
  }
  std::string describe() const override { return "the float16 conversion of '" + f32_.name + "'"; }

 private:
  Tensor f32_;
};

}  // namespace

Float16Settings readFloat16Settings(const PassOptions& options) {
  Float16Settings s;
  for (const BlockRule& r : kBlockList)
    s.blocked[r.op] = r.why;
  const auto& extra = options.extra;
  auto get = [&](const char* key) -> const std::string* {
    auto it = extra.find(std::string("convert-float16.") + key);
    return it == extra.end() ? nullptr : &it->second;
  };
  if (const std::string* v = get("keep-io-types")) {
    if (*v != "true" && *v != "false" && *v != "1" && *v != "0")
      throw Error("convert-float16.keep-io-types: expected true or false, got '" + *v + "'");
    s.keep_io = *v == "true" || *v == "1";
  }
  if (const std::string* v = get("block")) {
    for (const std::string& op : splitList(*v))
      s.blocked[op] = "on the block list (convert-float16.block)";
  }
  if (const std::string* v = get("allow")) {
    for (const std::string& op : splitList(*v))
      s.blocked.erase(op);
  }
  return s;
}

bool isFloat16IslandStep(const std::string& op) {
  return std::strstr(kIslandSteps, (" " + op + " ").c_str()) != nullptr;
}

Tensor toFloat16(const Tensor& t) {
  const int64_t count = t.numElements();
  Tensor h;
  if (t.byteSize() >= kLazyBytes) {
    auto src = std::make_shared<HalfOfFloat>(t);
    h = Tensor(DataType::kFloat16, t.dims(),
               Buffer::fromSource(src, 0, static_cast<size_t>(count) * 2));
  } else {
    h = Tensor::uninitialized(DataType::kFloat16, t.dims());
    std::vector<float> in(static_cast<size_t>(count));
    t.buffer().copyTo(0, in.size() * 4, reinterpret_cast<uint8_t*>(in.data()));
    kernels::floatToHalfSaturatedHwy(in.data(), reinterpret_cast<uint16_t*>(h.mutableBytes()),
                                     in.size());
  }
  h.name = t.name;
  h.doc_string = t.doc_string;
  h.metadata_props = t.metadata_props;
  if (t.external) {  // the output keeps the input's choice of external data
    h.external.emplace();
    h.external->location = t.external->location;
  }
  return h;
}

HalfRange scanHalfRange(const Tensor& t) {
  // 8 MiB per read of a file-backed weight: in a browser Worker each read (FileReaderSync)
  // has a fixed cost of about a millisecond, and 64 KiB reads made this scan of a 1.1B
  // decoder take 80 of the page's 113 s.
  constexpr size_t kChunk = 2 << 20;
  std::vector<float> buf(kChunk);
  const auto count = static_cast<uint64_t>(t.numElements());
  HalfRange r;
  for (uint64_t first = 0; first < count; first += kChunk) {
    const auto k = static_cast<size_t>(std::min<uint64_t>(kChunk, count - first));
    t.buffer().copyTo(first * 4, k * 4, reinterpret_cast<uint8_t*>(buf.data()));
    for (size_t i = 0; i < k; ++i) {
      const double a = std::fabs(static_cast<double>(buf[i]));
      if (!std::isfinite(a) || a <= kFloat16Max) continue;
      if (a >= kFloat16Sentinel)
        ++r.saturated;
      else
        r.largest_kept = std::max(r.largest_kept, a);
    }
  }
  return r;
}

}  // namespace onnxfold
