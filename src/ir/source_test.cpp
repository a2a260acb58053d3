// Buffers that name a range of a Source: nothing is read until the bytes are needed, copies
// share one read, partial reads do not make a range resident, and the writer hands ranges to a
// sink that can copy them itself (the output plan) or reads them in bounded chunks.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/buffer.h"
#include "ir/error.h"
#include "ir/sink.h"
#include "ir/tensor.h"
#include "onnx/reader.h"
#include "onnx/skeleton.h"
#include "onnx/writer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

// An in-memory source that counts what is read from it.
class CountingSource : public Source {
 public:
  explicit CountingSource(std::string bytes, int id = 7) : bytes_(std::move(bytes)), id_(id) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    if (offset + n > bytes_.size()) throw ResourceError("read past the end");
    std::memcpy(dst, bytes_.data() + offset, n);
    ++reads;
    bytes_read += n;
  }
  int hostId() const override { return id_; }
  std::string describe() const override { return "test source"; }
  mutable int reads = 0;
  mutable uint64_t bytes_read = 0;

 private:
  std::string bytes_;
  int id_;
};

std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    s[i] = static_cast<char>(seed >> 24);
  }
  return s;
}

TEST(SourceRange, ReadsOnlyWhenDataIsNeededAndOnceForAllCopies) {
  auto src = std::make_shared<CountingSource>(pattern(1 << 16, 1));
  Buffer b = Buffer::fromSource(src, 100, 4000);
  EXPECT_TRUE(b.isSourceRange());
  EXPECT_FALSE(b.isResident());
  EXPECT_EQ(b.size(), 4000u);
  EXPECT_EQ(src->reads, 0) << "making the range reads nothing";
  const Buffer copy = b;
  uint8_t four[4];
  b.copyTo(10, 4, four);
  EXPECT_EQ(src->bytes_read, 4u) << "a partial read reads only that part";
  EXPECT_FALSE(b.isResident());
  const uint8_t* p = copy.data();
  EXPECT_EQ(std::memcmp(p, pattern(1 << 16, 1).data() + 100, 4000), 0);
  EXPECT_EQ(std::memcmp(four, p + 10, 4), 0);
  EXPECT_EQ(b.data(), p) << "copies share the one read";
  EXPECT_EQ(src->reads, 2);
  const Buffer part = b.slice(1000, 8);
  EXPECT_EQ(part.data(), p + 1000) << "a slice of a read range reads nothing more";
  EXPECT_EQ(part.sourceOffset(), 1100u);
  EXPECT_EQ(src->reads, 2);
  b.release();
  EXPECT_FALSE(copy.isResident()) << "release drops the bytes for every copy";
  EXPECT_EQ(copy.data()[0], static_cast<uint8_t>(pattern(1 << 16, 1)[100]));
  EXPECT_EQ(src->reads, 3);
}

// A 5 GiB source whose byte i is (i * 31) >> 3, made up on demand.
class SyntheticSource : public Source {
 public:
  uint64_t size() const override { return uint64_t{5} << 30; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    for (size_t i = 0; i < n; ++i)
      dst[i] = static_cast<uint8_t>(((offset + i) * 31) >> 3);
  }
  std::string describe() const override { return "synthetic"; }
};

TEST(SourceRange, FilesLargerThanTheAddressSpaceAreAddressedWith64BitOffsets) {
  // In wasm32 size_t is 32 bits: a weight 4.5 GiB into a data file must still be found.
  std::shared_ptr<const Source> src = std::make_shared<SyntheticSource>();
  const uint64_t at = (uint64_t{9} << 29) + 12;
  ReadOptions ro;
  ro.open_external = [&](const std::string&) { return src; };
  test::ModelBuilder b;
  Tensor t(DataType::kFloat, {16}, rangeOf(src, at, 64));  // 64 bytes: written externally
  t.name = "w";
  Value* w = b.initializer(std::move(t));
  b.output(b.op("Neg", {w}));
  std::unique_ptr<Model> m = b.build();
  WriteOptions wo;
  wo.external_threshold = 0;
  wo.external_location = "data";
  std::string data;
  wo.open_external = [&](const std::string&) -> std::unique_ptr<Sink> {
    struct Into : Sink {
      std::string& s;
      explicit Into(std::string& out) : s(out) {}
      void write(const uint8_t* d, size_t n) override {
        s.append(reinterpret_cast<const char*>(d), n);
      }
    };
    return std::make_unique<Into>(data);
  };
  StringSink model;
  writeModel(*m, model, wo);
  ASSERT_EQ(data.size(), 64u);
  for (size_t i = 0; i < 64; ++i)
    EXPECT_EQ(static_cast<uint8_t>(data[i]), static_cast<uint8_t>(((at + i) * 31) >> 3));

  // A model whose tensor lies 4.5 GiB into its data file (an unresolved reference written
  // back as it is), read with that file as the source.
  Tensor ref(DataType::kFloat, {});
  ref.setBuffer(Buffer());
  ref.reshape({4});
  ref.name = "r";
  ref.external = ExternalDataRef{"data", static_cast<int64_t>(at), 16, "", {}};
  test::ModelBuilder b2;
  b2.output(b2.op("Neg", {b2.initializer(std::move(ref))}));
  const std::string bytes = writeModelToString(*b2.build());
  std::unique_ptr<Model> back = readModel(test::bufferOf(bytes), ro);
  const Tensor& r = *back->graph->lookup("r")->initializer();
  EXPECT_EQ(r.buffer().sourceOffset(), at);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_EQ(r.bytes()[i], static_cast<uint8_t>(((at + i) * 31) >> 3));
}

TEST(SourceRange, WritingIntoATensorCopiesStraightFromTheSource) {
  auto src = std::make_shared<CountingSource>(pattern(64, 2));
  Tensor t(DataType::kFloat, {4}, Buffer::fromSource(src, 16, 16));
  uint8_t* w = t.mutableBytes();
  EXPECT_EQ(src->bytes_read, 16u);
  EXPECT_EQ(std::memcmp(w, pattern(64, 2).data() + 16, 16), 0);
  EXPECT_FALSE(t.buffer().isSourceRange()) << "the tensor owns its new bytes";
}

TEST(SourceRange, SampleHashReadsLittleAndSameContentStreams) {
  const std::string bytes = pattern(1 << 20, 3);
  auto a_src = std::make_shared<CountingSource>(bytes + bytes);
  Tensor a(DataType::kFloat, {1 << 18}, Buffer::fromSource(a_src, 0, 1 << 20));
  Tensor b(DataType::kFloat, {1 << 18}, Buffer::fromSource(a_src, 1 << 20, 1 << 20));
  std::string changed = bytes;
  changed[12345] ^= 1;
  auto c_src = std::make_shared<CountingSource>(changed);
  Tensor c(DataType::kFloat, {1 << 18}, Buffer::fromSource(c_src, 0, 1 << 20));
  EXPECT_EQ(a.sampleHash(), b.sampleHash());
  EXPECT_LE(a_src->bytes_read, 2 * 1024u) << "16 samples of 64 bytes each";
  EXPECT_TRUE(a.sameContent(b));
  EXPECT_FALSE(a.isLoaded() && a.buffer().isResident()) << "compared in chunks, not made resident";
  EXPECT_FALSE(a.sameContent(c)) << "one flipped bit";
  EXPECT_EQ(a.contentHash(), b.contentHash());
  EXPECT_NE(a.contentHash(), c.contentHash());
}

// A sink that records the plan: bytes, or (source id, offset, length) for ranges.
class PlanSink : public Sink {
 public:
  struct Piece {
    std::string bytes;
    int source = -1;
    uint64_t offset = 0, length = 0;
  };
  void write(const uint8_t* data, size_t size) override {
    if (pieces.empty() || pieces.back().source >= 0) pieces.emplace_back();
    pieces.back().bytes.append(reinterpret_cast<const char*>(data), size);
  }
  void writeBuffer(const Buffer& b) override {
    if (b.source() == nullptr) return Sink::writeBuffer(b);
    pieces.push_back({"", b.source()->hostId(), b.sourceOffset(), b.size()});
  }
  // Assembled from the plan and the source's bytes.
  std::string assemble(const std::string& source_bytes) const {
    std::string out;
    for (const Piece& p : pieces)
      out += p.source < 0 ? p.bytes : source_bytes.substr(p.offset, p.length);
    return out;
  }
  std::vector<Piece> pieces;
};

TEST(SourceRange, TheWriterEmitsUnchangedWeightsAsRangesOfTheirSource) {
  const std::string data = pattern(3 * 8192, 4);
  auto src = std::make_shared<CountingSource>(data, 3);
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2048});
  auto weight = [&](const char* name, uint64_t offset) {
    Tensor t(DataType::kFloat, {2048}, Buffer::fromSource(src, offset, 8192));
    t.name = name;
    return b.initializer(std::move(t));
  };
  Value* w1 = weight("w1", 0);
  Value* w2 = weight("w2", 8192);
  b.output(b.op("Add", {b.op("Mul", {x, w1}), w2}));
  std::unique_ptr<Model> m = b.build();

  // Inline: the model's bytes are a plan with two ranges; nothing was read.
  PlanSink inline_plan;
  writeModel(*m, inline_plan);
  int ranges = 0;
  for (const auto& p : inline_plan.pieces)
    ranges += p.source == 3;
  EXPECT_EQ(ranges, 2);
  EXPECT_EQ(src->reads, 0);
  // The assembled plan is exactly the model with the weights inline.
  std::unique_ptr<Model> back = readModel(test::bufferOf(inline_plan.assemble(data)));
  EXPECT_EQ(
      std::memcmp(back->graph->lookup("w2")->initializer()->bytes(), data.data() + 8192, 8192), 0);

  // A sink that cannot copy ranges gets them read through a chunk.
  StringSink plain;
  writeModel(*m, plain);
  EXPECT_EQ(plain.out, inline_plan.assemble(data));
  EXPECT_EQ(src->bytes_read, 2 * 8192u);
}

TEST(SourceRange, ExternalDataIsSplitIntoNumberedFilesAtTheLimit) {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1000});
  std::vector<Value*> ws;
  for (int i = 0; i < 5; ++i) {
    std::vector<float> v(1000, static_cast<float>(i));
    ws.push_back(b.initializer("w" + std::to_string(i), {1000}, v));
  }
  b.output(b.op("Sum", {x, ws[0], ws[1], ws[2], ws[3], ws[4]}));
  std::unique_ptr<Model> m = b.build();
  std::map<std::string, std::string> files;
  WriteOptions wo;
  wo.external_threshold = 1024;
  wo.external_location = "m.onnx.data";
  wo.external_file_limit = 9000;  // two 4000-byte tensors (at 4096-byte offsets) fit, not three
  wo.open_external = [&](const std::string& location) -> std::unique_ptr<Sink> {
    struct Into : Sink {
      std::string& s;
      explicit Into(std::string& out) : s(out) {}
      void write(const uint8_t* d, size_t n) override {
        s.append(reinterpret_cast<const char*>(d), n);
      }
    };
    return std::make_unique<Into>(files[location]);
  };
  StringSink model;
  const WriteStats stats = writeModel(*m, model, wo);
  EXPECT_EQ(stats.external_files,
            (std::vector<std::string>{"m.onnx.data", "m.onnx.data.1", "m.onnx.data.2"}));
  // transformers.js reads "<file>_data", "<file>_data_1", ...: the same split, other names.
  {
    WriteOptions named = wo;
    named.external_location = "m.onnx_data";
    named.external_chunk_separator = "_";
    named.open_external = [](const std::string&) { return std::make_unique<StringSink>(); };
    StringSink other;
    EXPECT_EQ(writeModel(*m, other, named).external_files,
              (std::vector<std::string>{"m.onnx_data", "m.onnx_data_1", "m.onnx_data_2"}));
  }
  for (const auto& [name, bytes] : files)
    EXPECT_LE(bytes.size(), 9000u) << name;
  ReadOptions ro;
  ro.open_external = [&](const std::string& location) -> std::shared_ptr<const Source> {
    return std::make_shared<MemorySource>(test::bufferOf(files.at(location)));
  };
  std::unique_ptr<Model> back = readModel(test::bufferOf(model.out), ro);
  for (int i = 0; i < 5; ++i) {
    const Tensor& t = *back->graph->lookup("w" + std::to_string(i))->initializer();
    EXPECT_EQ(t.at<float>(999), static_cast<float>(i));
  }
}

TEST(SourceRange, AMemoryLimitFailsAllocationsWithAResourceError) {
  Buffer::resetPeakMemory();
  uint8_t* p = nullptr;
#ifdef __EMSCRIPTEN__
  // In wasm the limit is on the whole heap: at its current size, it may not grow. A request
  // as large as the heap cannot fit in it (half of it may, when earlier tests left the heap
  // large and mostly free).
  const uint64_t heap = Buffer::heapBytes();
  Buffer::setMemoryLimit(heap);
  EXPECT_THROW(Buffer::allocateUninitialized(static_cast<size_t>(heap), &p), ResourceError);
#else
  const uint64_t before = Buffer::memoryStats().live;
  Buffer::setMemoryLimit(before + (1 << 20));
  EXPECT_NO_THROW(Buffer::allocateUninitialized(512 << 10, &p));
  EXPECT_THROW(Buffer::allocateUninitialized(2 << 20, &p), ResourceError);
#endif
  Buffer::setMemoryLimit(0);
  Buffer held;
  EXPECT_NO_THROW(held = Buffer::allocateUninitialized(2 << 20, &p));
  EXPECT_GE(Buffer::memoryStats().live, uint64_t{2} << 20);  // counted while it lives
}

}  // namespace
}  // namespace onnxfold

namespace onnxfold {
namespace {

TEST(Skeleton, TheGraphIsReadAndTheWeightsStayInTheFile) {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {65536});
  std::vector<float> big(65536), small(4, 2.0f);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<float>(i % 1000);
  Value* w = b.initializer("w", {65536}, big);
  Value* s = b.initializer("s", {4}, small);
  std::vector<float> cbig(20000, 3.0f);
  Tensor ct(DataType::kFloat, {20000}, Buffer::copyOf(cbig.data(), cbig.size() * sizeof(float)));
  std::vector<Attribute> attrs;
  attrs.push_back(Attribute::makeTensor("value", std::move(ct)));
  Value* c = b.op("Constant", {}, std::move(attrs));
  Value* y = b.op("Add", {b.op("Mul", {x, w}), b.op("ReduceSum", {c})});
  b.output(b.op("Add", {y, b.op("ReduceSum", {s})}));
  const std::string file = writeModelToString(*b.build());

  auto src = std::make_shared<CountingSource>(file);
  const Skeleton sk = readSkeleton(src);
  EXPECT_EQ(sk.elided.size(), 2u) << "the initializer and the Constant's tensor";
  EXPECT_LT(sk.bytes.size(), 4096u);
  EXPECT_LT(src->bytes_read, 3 * 16384u) << "a few 16 KiB buffers of graph, not the weights";
  ReadOptions ro;
  ro.skeleton = &sk;
  std::unique_ptr<Model> m = readModel(sk.bytes, ro);
  const Tensor& wt = *m->graph->lookup("w")->initializer();
  EXPECT_TRUE(wt.buffer().isSourceRange());
  EXPECT_FALSE(wt.buffer().isResident());
  EXPECT_EQ(writeModelToString(*m), file) << "written back byte for byte (ranges read through)";
  EXPECT_EQ(wt.at<float>(65535), 535.0f);
}

}  // namespace
}  // namespace onnxfold

namespace onnxfold {
namespace {

// Found by the reader fuzzer: a skeleton read must write what a direct read writes.
TEST(Skeleton, UnknownFieldsAfterAnEmptyGraphWriteAsADirectReadDoes) {
  const std::vector<uint8_t> bytes = {0x3a, 0x00, 0x7a, 0x02, 0x68, 0x68, 0x68, 0x68, 0x68,
                                      0xff, 0xff, 0x68, 0x68, 0x68, 0x68, 0x68, 0x68, 0x68,
                                      0x68, 0xab, 0x00, 0x08, 0xab, 0xab, 0x68, 0x68, 0x68,
                                      0x68, 0x68, 0x68, 0x68, 0x68, 0x68, 0x7a, 0x00};
  const Buffer in = Buffer::copyOf(bytes.data(), bytes.size());
  std::string direct, skeleton;
  bool direct_ok = true, skeleton_ok = true;
  try {
    direct = writeModelToString(*readModel(in));
  } catch (const Error&) {
    direct_ok = false;
  }
  try {
    const Skeleton sk = readSkeleton(std::make_shared<MemorySource>(in), 32);
    ReadOptions ro;
    ro.skeleton = &sk;
    skeleton = writeModelToString(*readModel(sk.bytes, ro));
  } catch (const Error&) {
    skeleton_ok = false;
  }
  EXPECT_EQ(direct_ok, skeleton_ok);
  EXPECT_EQ(direct, skeleton);
}

}  // namespace
}  // namespace onnxfold
