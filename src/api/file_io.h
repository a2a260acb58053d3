// Files for the native CLI, tests and benchmarks: memory-mapped input (so
// weights are never copied), atomic output (temp file + rename, or nothing),
// and external-data files resolved next to the model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/onnxfold.h"

namespace onnxfold {

// The file's bytes: memory-mapped read-only natively, read into memory in wasm.
Buffer readFileBuffer(const std::string& path);

// A file written atomically: bytes go to a temporary file beside `path`, and
// commit() renames it into place. Destroyed without commit(), it leaves nothing.
class AtomicFile : public Sink {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile() override;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const uint8_t* data, size_t size) override;
  // A range of a file source is copied file to file (copy_file_range).
  void writeBuffer(const Buffer& b) override;
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_;
  int fd_ = -1;
};

// The files one run reads and writes. Before anything is written, every output is compared
// with every input and with the other outputs (by real path, and by device and inode for files
// that exist; a new file by its folder's real path and its name); each output is written to a
// temporary, and commit() renames them all into place once all of them succeeded, so a failed
// run leaves nothing behind and never replaces a file the user did not name.
class WritePlan {
 public:
  WritePlan() = default;
  WritePlan(const WritePlan&) = delete;
  WritePlan& operator=(const WritePlan&) = delete;

  // A file the run reads; `role` names it in errors ("input model").
  void addInput(const std::string& path, const std::string& role);
  // A file the run writes ("output", "report"): an Error when it is a file the run reads,
  // another output or a folder, or when its folder does not exist. Outputs are committed in
  // the reverse order they were added: add the model before its data files.
  AtomicFile& addOutput(const std::string& path, const std::string& role);
  void commit();

  // A path as compared: its real path, and device and inode when it exists.
  struct Entry {
    std::string path, role, real;
    bool exists = false;
    uint64_t dev = 0, ino = 0;
  };

 private:
  static Entry identify(const std::string& path, const std::string& role);
  std::vector<Entry> inputs_, outputs_;
  std::vector<std::unique_ptr<AtomicFile>> files_;  // parallel to outputs_
};

// Reads `in`, optimizes, writes `out` (with its external-data files when there are any, and
// the JSON report to `report_path` unless it is empty) as one WritePlan. `options` may name
// the external-data file; by default it is "<out file name>.data".
Report optimizeFile(const std::string& in, const std::string& out, Options options,
                    const std::string& report_path = "");

// The variants of `in` (variantPlan) written into the existing folder `dir` from one read
// (optimizeVariants), as one WritePlan: every file, or none if any variant fails.
std::vector<Report> variantsFile(const std::string& in, const std::string& dir,
                                 const std::vector<VariantFile>& plan, const Options& options);

ModelSummary inspectFile(const std::string& path);
// validate() on a file (its external data read from its folder, range by range).
void validateFile(const std::string& path);

// split-constants on files: prep and main are written as one WritePlan.
SplitReport splitConstantsFile(const std::string& in, const std::string& prep,
                               const std::string& main, const Options& options = {});
std::string modelTextFile(const std::string& path);

}  // namespace onnxfold
