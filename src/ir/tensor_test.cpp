// Tensor storage: zero-copy views, copy-on-write, element counts, content identity.
#include "ir/tensor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace onnxfold {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A Buffer viewing a shared std::string, as the reader makes for raw_data.
Buffer stringView(const std::shared_ptr<std::string>& s, size_t offset, size_t size) {
  return Buffer(reinterpret_cast<const uint8_t*>(s->data()) + offset, size, s);
}

std::vector<float> floatsOf(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.at<float>(i);
  return v;
}

TEST(Tensor, ViewIsZeroCopyAndWriteCopies) {
  auto file = std::make_shared<std::string>(64, '\0');
  const float values[4] = {1, 2, 3, 4};
  std::memcpy(file->data() + 16, values, sizeof values);
  Tensor t(DataType::kFloat, {2, 2}, stringView(file, 16, 16));

  // The tensor is a view of the "file": same bytes, and it keeps the file alive.
  EXPECT_EQ(t.bytes(), reinterpret_cast<const uint8_t*>(file->data()) + 16);
  EXPECT_EQ(t.byteSize(), 16u);
  EXPECT_EQ(file.use_count(), 2);
  EXPECT_TRUE(t.isLoaded());

  // Writing copies first; the file is untouched.
  uint8_t* w = t.mutableBytes();
  EXPECT_NE(w, reinterpret_cast<const uint8_t*>(file->data()) + 16);
  EXPECT_EQ(floatsOf(t), (std::vector<float>{1, 2, 3, 4}));
  const float nine = 9;
  std::memcpy(w, &nine, 4);
  EXPECT_EQ(t.at<float>(0), 9.0f);
  float original = 0;
  std::memcpy(&original, file->data() + 16, 4);
  EXPECT_EQ(original, 1.0f);
  EXPECT_EQ(file.use_count(), 1) << "the copy no longer holds the file";

  // Now the storage is exclusive: a second write is in place.
  EXPECT_EQ(t.mutableBytes(), w);
}

TEST(Tensor, OwnedStorageIsWrittenInPlaceUntilShared) {
  Tensor t(DataType::kInt32, {3});
  EXPECT_TRUE(t.buffer().isAligned(64));
  EXPECT_EQ(t.byteSize(), 12u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(t.at<int32_t>(i), 0) << "zero-initialised";
  const uint8_t* before = t.bytes();
  EXPECT_EQ(t.mutableBytes(), before);

  // A copy shares the bytes; writing either side copies that side only.
  Tensor c = t;
  EXPECT_EQ(c.bytes(), t.bytes());
  const int32_t seven = 7;
  std::memcpy(c.mutableBytes(), &seven, 4);
  EXPECT_NE(c.bytes(), t.bytes());
  EXPECT_EQ(c.at<int32_t>(0), 7);
  EXPECT_EQ(t.at<int32_t>(0), 0);
  EXPECT_EQ(t.bytes(), before);
  // t is exclusive again once c stopped sharing.
  EXPECT_EQ(t.mutableBytes(), before);
}

TEST(Tensor, MisalignedViewIsCopiedForWritesAndAligned) {
  auto file = std::make_shared<std::string>(40, '\0');
  const double values[2] = {1.5, -2.25};
  std::memcpy(file->data() + 3, values, sizeof values);
  Tensor t(DataType::kDouble, {2}, stringView(file, 3, 16));
  EXPECT_FALSE(t.buffer().isAligned(8));
  EXPECT_EQ(t.at<double>(1), -2.25);  // unaligned reads go through memcpy

  Tensor a = t.aligned();
  EXPECT_TRUE(a.buffer().isAligned(16));
  EXPECT_TRUE(a.sameContent(t));
  EXPECT_EQ(t.bytes(), reinterpret_cast<const uint8_t*>(file->data()) + 3) << "t is unchanged";

  // A view whose owner is the whole file is never written in place, even if aligned.
  Tensor whole(DataType::kDouble, {2}, stringView(file, 0, 16));
  const uint8_t* view = whole.bytes();
  EXPECT_NE(whole.mutableBytes(), view);
}

TEST(Tensor, ExternalReferenceDroppedOnWrite) {
  Tensor t(DataType::kFloat, {2});
  t.external = ExternalDataRef{"w.bin", 0, 8, "", {}};
  EXPECT_TRUE(t.isLoaded());
  t.mutableBytes();
  EXPECT_FALSE(t.external.has_value()) << "written data no longer matches the file";

  // An external tensor without bytes is not loaded.
  Tensor u(DataType::kFloat, {});
  u.setBuffer(Buffer());
  u.reshape({4});
  u.external = ExternalDataRef{"w.bin", 0, 16, "", {}};
  EXPECT_FALSE(u.isLoaded());
}

TEST(Tensor, CheckedElementCount) {
  EXPECT_EQ(checkedElementCount({}), 1);
  EXPECT_EQ(checkedElementCount({2, 3, 4}), 24);
  EXPECT_EQ(checkedElementCount({0, kMax}), 0);
  EXPECT_EQ(checkedElementCount({kMax, 0}), 0);
  EXPECT_EQ(checkedElementCount({kMax}), kMax);
  EXPECT_EQ(checkedElementCount({int64_t{1} << 31, int64_t{1} << 31}), int64_t{1} << 62);
  EXPECT_EQ(checkedElementCount({-1}), -1);
  EXPECT_EQ(checkedElementCount({3, -2}), -1);
  EXPECT_EQ(checkedElementCount({kMax, 2}), -1);
  EXPECT_EQ(checkedElementCount({int64_t{1} << 32, int64_t{1} << 32}), -1);
  EXPECT_EQ(checkedElementCount({int64_t{1} << 62, 2}), -1);
  EXPECT_EQ(checkedElementCount({2, 2, int64_t{1} << 61}), -1);
}

TEST(Tensor, RawByteSizeOfSubByteTypes) {
  EXPECT_EQ(rawByteSize(DataType::kInt4, 3), 2u);
  EXPECT_EQ(rawByteSize(DataType::kUint4, 4), 2u);
  EXPECT_EQ(rawByteSize(DataType::kInt2, 5), 2u);
  EXPECT_EQ(rawByteSize(DataType::kBool, 5), 5u);
  EXPECT_EQ(rawByteSize(DataType::kComplex128, 2), 32u);
  Tensor t(DataType::kUint4, {3});
  EXPECT_EQ(t.byteSize(), 2u);
}

TEST(Tensor, SameContentAndHash) {
  Tensor a(DataType::kFloat, {2, 2});
  Tensor b(DataType::kFloat, {2, 2});
  const float v[4] = {1, -2, 3.5f, 0};
  std::memcpy(a.mutableBytes(), v, sizeof v);
  std::memcpy(b.mutableBytes(), v, sizeof v);
  a.name = "a";
  b.name = "b";
  b.doc_string = "names and docs do not count";
  EXPECT_NE(a.bytes(), b.bytes());
  EXPECT_TRUE(a.sameContent(b));
  EXPECT_EQ(a.contentHash(), b.contentHash());

  // Same bytes, other dims.
  Tensor c = b;
  c.reshape({4});
  EXPECT_FALSE(a.sameContent(c));
  EXPECT_NE(a.contentHash(), c.contentHash());

  // Same bytes and dims, other dtype.
  Tensor d(DataType::kInt32, {2, 2}, b.buffer());
  EXPECT_FALSE(a.sameContent(d));
  EXPECT_NE(a.contentHash(), d.contentHash());

  // One element differs.
  Tensor e = b;
  const float x = 3.25f;
  std::memcpy(e.mutableBytes() + 8, &x, 4);
  EXPECT_FALSE(a.sameContent(e));
  EXPECT_NE(a.contentHash(), e.contentHash());
  EXPECT_TRUE(b.sameContent(b));

  // -0.0 and 0.0 differ in bytes, so they are different constants.
  Tensor z1(DataType::kFloat, {1}), z2(DataType::kFloat, {1});
  const float mz = -0.0f;
  std::memcpy(z2.mutableBytes(), &mz, 4);
  EXPECT_FALSE(z1.sameContent(z2));
}

TEST(Tensor, StringTensors) {
  Tensor s(DataType::kString, {3});
  EXPECT_EQ(s.strings().size(), 3u);
  EXPECT_EQ(s.byteSize(), 0u);
  s.mutableStrings() = {"a", "", std::string("b\0c", 3)};
  Tensor t(DataType::kString, {3});
  t.mutableStrings() = {"a", "", std::string("b\0c", 3)};
  EXPECT_TRUE(s.sameContent(t));
  EXPECT_EQ(s.contentHash(), t.contentHash());
  // Length-prefixed hashing: "ab","" differs from "a","b".
  Tensor u(DataType::kString, {2}), w(DataType::kString, {2});
  u.mutableStrings() = {"ab", ""};
  w.mutableStrings() = {"a", "b"};
  EXPECT_FALSE(u.sameContent(w));
  EXPECT_NE(u.contentHash(), w.contentHash());
}

TEST(Tensor, EmptyAndScalar) {
  Tensor empty(DataType::kFloat, {0, 5});
  EXPECT_EQ(empty.numElements(), 0);
  EXPECT_EQ(empty.byteSize(), 0u);
  Tensor empty2(DataType::kFloat, {5, 0});
  EXPECT_FALSE(empty.sameContent(empty2));
  Tensor scalar(DataType::kInt64, {});
  EXPECT_EQ(scalar.numElements(), 1);
  EXPECT_EQ(scalar.byteSize(), 8u);
  EXPECT_EQ(scalar.rank(), 0u);
}

}  // namespace
}  // namespace onnxfold
