// Files on disk (api/file_io.h): a run never replaces a file it reads or one the user did not
// name, a failed run leaves nothing behind, and thousands of data files need few descriptors.
#include "api/file_io.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "onnx/proto_test_util.h"

namespace onnxfold {
namespace {

namespace pb = proto_test::pb;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

struct Weight {
  std::string location;
  int offset = 0;
};

// Weights w<i> of float[16] (64 bytes: smaller tensors stay inline in outputs, writer.h
// kInlineBytes), external at (location, offset). Unless `fold`, each is added to
// the input x (y<i> = Add(x, w<i>): nothing folds, every weight stays); with `fold`, the one
// output is their Sum (folded into one weight, so every weight is read).
std::string modelWithExternalWeights(const std::vector<Weight>& weights, bool fold = false) {
  pb::GraphSpec g;
  std::vector<std::string> all;
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::string w = "w" + std::to_string(i), offset = std::to_string(weights[i].offset);
    g.initializers.push_back(
        pb::externalTensor(w, 1, {16}, weights[i].location.c_str(), offset.c_str(), "64"));
    all.push_back(w);
    if (!fold) {
      g.nodes.push_back(pb::node({"x", w}, {"y" + w}, "Add", "add" + w));
      g.outputs.push_back(pb::valueInfo("y" + w, 1, {16}));
    }
  }
  if (fold) {
    g.nodes = {pb::node(all, {"y"}, "Sum", "sum")};
    g.outputs = {pb::valueInfo("y", 1, {16})};
  } else {
    g.inputs = {pb::valueInfo("x", 1, {16})};
  }
  return pb::model(pb::graph(g));
}

// `count` floats 1, 2, 3, ... as little-endian bytes.
std::string weightBytes(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    const float v = static_cast<float>(i + 1);
    char b[4];
    std::memcpy(b, &v, 4);
    out.append(b, 4);
  }
  return out;
}
const std::string kWeight = weightBytes(16);

// A fresh folder holding m.onnx, whose three (different) weights are in m.onnx.data.
class FileIO : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/onnxfold-file-io-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    spit(path("m.onnx"),
         modelWithExternalWeights({{"m.onnx.data", 0}, {"m.onnx.data", 64}, {"m.onnx.data", 128}}));
    spit(path("m.onnx.data"), weightBytes(48));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Every entry under the folder, with its kind, bytes and modification time: equal before and
  // after a refused run means nothing was replaced and nothing left behind.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
      const std::string p = e.path().string();
      struct stat st {};
      ::lstat(p.c_str(), &st);
      out[p.substr(dir_.size())] = S_ISDIR(st.st_mode)
                                       ? "dir"
                                       : slurp(p) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
                                             std::to_string(st.st_mtim.tv_nsec);
    }
    return out;
  }

  // `run` fails with an Error mentioning `message`, and the folder is as it was.
  template <class F>
  void expectRefused(F run, const std::string& message) {
    const auto before = snapshot();
    try {
      run();
      ADD_FAILURE() << "no error; expected one mentioning: " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    }
    EXPECT_EQ(snapshot(), before) << "a file was replaced or left behind";
  }

  std::string dir_;
};

Options allExternal() {
  Options o;
  o.external_data_threshold = 0;  // every weight to the output's data file
  return o;
}

TEST_F(FileIO, OutputNamingTheInputsDataFileIsRefused) {
  for (bool reuse : {false, true}) {
    Options o;
    o.reuse_input_data = reuse;
    expectRefused([&] { optimizeFile(path("m.onnx"), path("m.onnx.data"), o); },
                  "output '" + path("m.onnx.data") + "' is the input's external-data file");
  }
  expectRefused([&] { optimizeFile(path("m.onnx"), path("m.onnx"), {}); },
                "output '" + path("m.onnx") + "' is the input model; onnxfold never overwrites");
#ifndef __EMSCRIPTEN__  // no hard links through node's file system
  // Another name for the same file (a hard link) is the same file.
  ASSERT_EQ(::link(path("m.onnx.data").c_str(), path("alias.onnx").c_str()), 0);
  expectRefused([&] { optimizeFile(path("m.onnx"), path("alias.onnx"), {}); },
                "output '" + path("alias.onnx") + "' is the input's external-data file '" +
                    path("m.onnx.data") + "'");
#endif
}

TEST_F(FileIO, ReportNamingAnInputOrTheOutputIsRefused) {
  expectRefused([&] { optimizeFile(path("m.onnx"), path("o.onnx"), {}, path("m.onnx")); },
                "report '" + path("m.onnx") + "' is the input model");
  expectRefused([&] { optimizeFile(path("m.onnx"), path("o.onnx"), {}, path("m.onnx.data")); },
                "report '" + path("m.onnx.data") + "' is the input's external-data file");
  expectRefused([&] { optimizeFile(path("m.onnx"), path("o.onnx"), {}, dir_ + "/./o.onnx"); },
                "output '" + path("o.onnx") + "' is also the report");
  expectRefused(
      [&] { optimizeFile(path("m.onnx"), path("o.onnx"), allExternal(), path("o.onnx.data")); },
      "external-data output '" + path("o.onnx.data") + "' is also the report");
}

TEST_F(FileIO, ExternalDataLocationNamingTheOutputIsRefused) {
  Options o = allExternal();
  o.external_data_location = "o.onnx";
  expectRefused([&] { optimizeFile(path("m.onnx"), path("o.onnx"), o); },
                "external-data output '" + path("o.onnx") + "' is also the output");
  o.external_data_location = "m.onnx.data";
  expectRefused(
      [&] { optimizeFile(path("m.onnx"), path("o.onnx"), o); },
      "external-data output '" + path("m.onnx.data") + "' is the input's external-data file");
}

TEST_F(FileIO, SplitConstantsPrepNamingTheInputsDataFileIsRefused) {
  expectRefused([&] { splitConstantsFile(path("m.onnx"), path("m.onnx.data"), path("main.onnx")); },
                "--prep output '" + path("m.onnx.data") + "' is the input's external-data file");
  expectRefused([&] { splitConstantsFile(path("m.onnx"), path("p.onnx"), dir_ + "//p.onnx"); },
                "--main output '" + dir_ + "//p.onnx' is also the --prep output");
}

TEST_F(FileIO, AFailedRunLeavesNothingBehind) {
  // The output is a folder.
  ASSERT_EQ(::mkdir(path("out").c_str(), 0755), 0);
  expectRefused([&] { optimizeFile(path("m.onnx"), path("out"), allExternal()); },
                "output '" + path("out") + "' is a directory");
  // A data chunk's name is a folder: found when the writer gets to it, after the first chunk.
  ASSERT_EQ(::mkdir(path("o.onnx.data.1").c_str(), 0755), 0);
  Options chunks = allExternal();
  chunks.external_data_file_limit = 64;  // one weight per file
  expectRefused([&] { optimizeFile(path("m.onnx"), path("o.onnx"), chunks); },
                "external-data output '" + path("o.onnx.data.1") + "' is a directory");
  // The report's folder does not exist: refused before the model or its data is written.
  expectRefused(
      [&] { optimizeFile(path("m.onnx"), path("o.onnx"), allExternal(), path("no/r.json")); },
      "report '" + path("no/r.json") + "': cannot use its folder");
}

TEST_F(FileIO, ASuccessfulRunCommitsEverythingAndNoTemporaries) {
  Options chunks = allExternal();
  chunks.external_data_file_limit = 64;
  const Report r = optimizeFile(path("m.onnx"), path("o.onnx"), chunks, path("r.json"));
  ASSERT_EQ(r.external_files.size(), 3u);
  std::vector<std::string> names;
  for (const auto& kv : snapshot())
    names.push_back(kv.first);
  EXPECT_EQ(names, (std::vector<std::string>{"/m.onnx", "/m.onnx.data", "/o.onnx", "/o.onnx.data",
                                             "/o.onnx.data.1", "/o.onnx.data.2", "/r.json"}));
  EXPECT_EQ(slurp(path("r.json")), r.toJson() + "\n");
  EXPECT_NO_THROW(validateFile(path("o.onnx")));
}

// variantsFile: one read for all, and all files or none. A variant named like the input, or
// one that fails after others were made, leaves the folder as it was.
TEST_F(FileIO, VariantsAreWrittenAllOrNone) {
  expectRefused([&] { variantsFile(path("m.onnx"), dir_, variantPlan("m", {"fp32"}), {}); },
                "'" + path("m.onnx") + "'");
  std::vector<VariantFile> plan = variantPlan("v", {"fp32", "fp16"});
  plan.push_back({"bad", "v_bad.onnx", R"({"quantize": "int4", "quantFormat": "qdq"})"});
  expectRefused([&] { variantsFile(path("m.onnx"), dir_, plan, allExternal()); }, "opset 21");
  plan.pop_back();
  const std::vector<Report> reports = variantsFile(path("m.onnx"), dir_, plan, allExternal());
  ASSERT_EQ(reports.size(), 2u);
  std::vector<std::string> names;
  for (const auto& kv : snapshot())
    names.push_back(kv.first);
  // fp16's weights are 32 bytes each: inline (writer.h kInlineBytes).
  EXPECT_EQ(names, (std::vector<std::string>{"/m.onnx", "/m.onnx.data", "/v.onnx", "/v.onnx_data",
                                             "/v_fp16.onnx"}));
  EXPECT_NO_THROW(validateFile(path("v_fp16.onnx")));
}

// Lowers the soft limit on open files for one test (not in wasm, where node owns the files).
class OpenFileLimit {
 public:
  explicit OpenFileLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
#ifndef __EMSCRIPTEN__
    rlimit lower = saved_;
    lower.rlim_cur = soft;
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &lower), 0);
#else
    (void)soft;
#endif
  }
  ~OpenFileLimit() {
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }

 private:
  rlimit saved_{};
};

// More data files than the process may open at once (the limit is lowered to 100, as 1,024
// would be by thousands of files): descriptors are opened on demand, 64 at most.
TEST_F(FileIO, ManyDataFilesNeedFewDescriptors) {
  std::vector<Weight> files;
  for (int i = 0; i < 300; ++i) {
    files.push_back({"w" + std::to_string(i) + ".bin"});
    spit(path(files.back().location), kWeight);
  }
  spit(path("many.onnx"), modelWithExternalWeights(files, true));
  // And one file under 300 names ("w0.bin", "./w0.bin", "././w0.bin", ...).
  std::vector<Weight> names;
  for (int i = 0; i < 300; ++i) {
    std::string loc;
    for (int k = 0; k < i; ++k)
      loc += "./";
    names.push_back({loc + "w0.bin"});
  }
  spit(path("same.onnx"), modelWithExternalWeights(names, true));

  const OpenFileLimit limit(100);
  for (const char* model : {"many.onnx", "same.onnx"}) {
    SCOPED_TRACE(model);
    Options o;
    o.passes = {"fold-constants"};  // reads every weight again, after the reader opened them
    const std::string out = path(std::string("o-") + model);
    const Report r = optimizeFile(path(model), out, o);
    EXPECT_EQ(r.before.initializers, 300u);
    EXPECT_EQ(r.after.nodes, 0u) << "Sum folded: every weight was read";
    EXPECT_NO_THROW(validateFile(out));
  }
}

}  // namespace
}  // namespace onnxfold
