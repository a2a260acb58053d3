#include "api/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "onnx/reader.h"

namespace onnxfold {

namespace {

std::string sysError(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

std::string dirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string realPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) throw Error(sysError("cannot resolve", path));
  return buf;
}

// A file as the kernel knows it: the same file under two names, or two hard links, is one.
struct FileKey {
  uint64_t dev = 0, ino = 0;
  bool operator==(const FileKey& o) const { return dev == o.dev && ino == o.ino; }
};
struct FileKeyHash {
  size_t operator()(const FileKey& k) const { return std::hash<uint64_t>()(k.dev * 31 + k.ino); }
};

// Opens `path` for reading and checks it is a regular file; its key and size in `st`.
int openRegular(const std::string& path, struct stat& st) {
  // Non-blocking: opening a FIFO for reading would wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(sysError("cannot open", path));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

using Descriptor = std::shared_ptr<const int>;
Descriptor adopt(int fd) {
  return Descriptor(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
}

// The descriptors of the files FileSources read, by file: at most kMaxOpen stay open (the most
// recently used), the others are opened again when read. A model may name thousands of data
// files (or one file under thousands of names), more than the usual limit of 1,024 open files.
class Descriptors {
 public:
  static Descriptors& instance() {
    static Descriptors* d = new Descriptors;  // never destroyed: sources may outlive statics
    return *d;
  }
  // A source of `key` now exists; `fd` (just opened) is kept if the file has none open.
  void add(const FileKey& key, const std::string& path, int fd) {
    const std::lock_guard<std::mutex> lock(m_);
    Entry& e = files_[key];
    ++e.users;
    if (e.path.empty()) e.path = path;
    if (e.fd) {
      ::close(fd);
      touch(key, e);
    } else {
      e.fd = adopt(fd);
      lru_.push_front(key);
      e.lru = lru_.begin();
      evict();
    }
  }
  // A source of `key` is gone; the last one closes the file.
  void remove(const FileKey& key) {
    const std::lock_guard<std::mutex> lock(m_);
    auto it = files_.find(key);
    if (it == files_.end() || --it->second.users > 0) return;
    if (it->second.fd) lru_.erase(it->second.lru);
    files_.erase(it);
  }
  // An open descriptor of `key` (held open while the caller keeps it).
  Descriptor get(const FileKey& key) {
    const std::lock_guard<std::mutex> lock(m_);
    Entry& e = files_.at(key);
    if (e.fd) {
      touch(key, e);
      return e.fd;
    }
    struct stat st {};
    const int fd = openRegular(e.path, st);
    if (!(FileKey{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)} == key)) {
      ::close(fd);
      throw ResourceError("'" + e.path + "' was replaced while onnxfold read it");
    }
    e.fd = adopt(fd);
    lru_.push_front(key);
    e.lru = lru_.begin();
    evict();
    return e.fd;
  }

 private:
  static constexpr size_t kMaxOpen = 64;
  struct Entry {
    std::string path;
    size_t users = 0;
    Descriptor fd;                     // null when closed
    std::list<FileKey>::iterator lru;  // valid while fd is set
  };
  void touch(const FileKey& key, Entry& e) {
    lru_.erase(e.lru);
    lru_.push_front(key);
    e.lru = lru_.begin();
  }
  void evict() {
    while (lru_.size() > kMaxOpen) {
      files_.at(lru_.back()).fd.reset();  // closes once no read holds it
      lru_.pop_back();
    }
  }
  std::mutex m_;
  std::unordered_map<FileKey, Entry, FileKeyHash> files_;
  std::list<FileKey> lru_;  // files with an open descriptor, most recently used first
};

// A file read with pread: weights in it are ranges, read only when a pass needs
// their values; the output copies them with copy_file_range (AtomicFile). Its descriptor is
// Descriptors', open only while the file is among the recently read.
class FileSource : public Source {
 public:
  explicit FileSource(const std::string& path, std::string location = "")
      : path_(path), location_(std::move(location)) {
    struct stat st {};
    const int fd = openRegular(path, st);
    key_ = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
    size_ = static_cast<uint64_t>(st.st_size);
    Descriptors::instance().add(key_, path_, fd);
  }
  ~FileSource() override { Descriptors::instance().remove(key_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  uint64_t size() const override { return size_; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    const Descriptor fd = descriptor();
    while (n > 0) {
      const ssize_t got = ::pread(*fd, dst, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw ResourceError(sysError("cannot read", path_) + " (did it change?)");
      dst += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
  }
  std::string describe() const override { return "'" + path_ + "'"; }
  std::string location() const override { return location_; }
  Descriptor descriptor() const { return Descriptors::instance().get(key_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string location_;
  FileKey key_;
  uint64_t size_ = 0;
};

// Opens external-data files relative to the model's folder, refusing any path
// (symlinks included) that resolves outside it; each location is opened once, as a
// source (nothing is read until a pass or the writer needs it). With a plan, each file is
// one of its inputs, and new data files (`create`, beside `out_path` when it is given) its
// outputs.
ExternalDataIO fileExternalIO(const std::string& model_path, const std::string& out_path,
                              WritePlan* plan) {
  ExternalDataIO io;
  const std::string in_dir = dirOf(model_path);
  auto cache = std::make_shared<std::unordered_map<std::string, std::shared_ptr<const Source>>>();
  io.open = [in_dir, cache, plan](const std::string& location) {
    auto found = cache->find(location);
    if (found != cache->end()) return found->second;
    const std::string root = realPath(in_dir);
    const std::string full = in_dir + "/" + location;
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0) {
      throw Error(sysError("external data file not found:", full));
    }
    const std::string resolved = realPath(full);
    if (resolved.compare(0, root.size() + 1, root + "/") != 0) {
      throw Error("external data location '" + location + "' resolves to '" + resolved +
                  "', outside the model's folder '" + root + "'");
    }
    if (plan != nullptr) plan->addInput(full, "input's external-data file");
    std::shared_ptr<const Source> source = std::make_shared<FileSource>(resolved, location);
    cache->emplace(location, source);
    return source;
  };
  if (plan != nullptr && !out_path.empty()) {
    const std::string out_dir = dirOf(out_path);
    io.create = [out_dir, plan](const std::string& location) -> std::unique_ptr<Sink> {
      checkExternalLocation(location, "external data output");
      struct Forward : Sink {
        AtomicFile* f;
        explicit Forward(AtomicFile* file) : f(file) {}
        void write(const uint8_t* d, size_t n) override { f->write(d, n); }
        void writeBuffer(const Buffer& b) override { f->writeBuffer(b); }
      };
      return std::make_unique<Forward>(
          &plan->addOutput(out_dir + "/" + location, "external-data output"));
    };
  }
  return io;
}

}  // namespace

Buffer readFileBuffer(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(sysError("cannot open", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error(sysError("cannot stat", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return Buffer(nullptr, 0, nullptr);
  }
#ifndef __EMSCRIPTEN__
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw Error(sysError("cannot map", path));
  std::shared_ptr<const void> owner(
      p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
  return Buffer(static_cast<const uint8_t*>(p), size, std::move(owner));
#else
  uint8_t* data = nullptr;
  Buffer b = Buffer::allocateUninitialized(size, &data);  // read() fills it all
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      throw Error(sysError("cannot read", path));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return b;
#endif
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::string tmpl = dirOf(path_) + "/." + baseName(path_) + ".tmp-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  fd_ = ::mkstemp(buf.data());
  if (fd_ < 0) throw Error(sysError("cannot create a temporary file for", path_));
  temp_ = buf.data();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::write(const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(sysError("cannot write", path_));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::writeBuffer(const Buffer& b) {
#ifdef __EMSCRIPTEN__
  Sink::writeBuffer(b);
#else
  const auto* file = dynamic_cast<const FileSource*>(b.source().get());
  if (file == nullptr || b.isResident()) {
    Sink::writeBuffer(b);
    return;
  }
  // In-kernel copy: the bytes never enter this process (and on filesystems that support it,
  // are not even copied). Falls back to reading through a chunk where the kernel refuses.
  const Descriptor in = file->descriptor();  // held open for the whole copy
  auto from = static_cast<loff_t>(b.sourceOffset());
  size_t left = b.size();
  while (left > 0) {
    const ssize_t n = ::copy_file_range(*in, &from, fd_, nullptr, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) throw Error("'" + file->path() + "' ended early (did it change?)");
      Sink::writeBuffer(b.slice(b.size() - left, left));
      return;
    }
    left -= static_cast<size_t>(n);
  }
#endif
}

void AtomicFile::commit() {
  // New files get the usual mode (mkstemp makes them 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw Error(sysError("cannot write", path_));
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    throw Error(sysError("cannot rename into", path_));
  temp_.clear();
}

WritePlan::Entry WritePlan::identify(const std::string& path, const std::string& role) {
  Entry e;
  e.path = path;
  e.role = role;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    e.exists = true;
    e.dev = static_cast<uint64_t>(st.st_dev);
    e.ino = static_cast<uint64_t>(st.st_ino);
    e.real = realPath(path);
    return e;
  }
  // Not there yet: its folder's real path and its name (the folder must exist).
  const std::string dir = dirOf(path);
  char buf[PATH_MAX];
  if (::realpath(dir.c_str(), buf) == nullptr) {
    throw Error(sysError(role + " '" + path + "': cannot use its folder", dir));
  }
  e.real = std::string(buf) + "/" + baseName(path);
  return e;
}

namespace {

bool sameFile(const WritePlan::Entry& a, const WritePlan::Entry& b) {
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return a.real == b.real;
}

// "report 'x' is the input model" (the other's path too when it is spelt differently).
std::string collision(const WritePlan::Entry& out, const WritePlan::Entry& other,
                      const std::string& verb) {
  return out.role + " '" + out.path + "' is " + verb + other.role +
         (other.path == out.path ? "" : " '" + other.path + "'");
}

}  // namespace

void WritePlan::addInput(const std::string& path, const std::string& role) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // nothing to overwrite; reading it will fail
  Entry in = identify(path, role);
  for (const Entry& out : outputs_) {
    if (sameFile(out, in))
      throw Error(collision(out, in, "the ") + "; onnxfold never overwrites its input");
  }
  inputs_.push_back(std::move(in));
}

AtomicFile& WritePlan::addOutput(const std::string& path, const std::string& role) {
  Entry out = identify(path, role);
  struct stat st {};
  if (out.exists && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw Error(role + " '" + path + "' is " +
                (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file"));
  }
  for (const Entry& in : inputs_) {
    if (sameFile(out, in))
      throw Error(collision(out, in, "the ") + "; onnxfold never overwrites its input");
  }
  for (const Entry& other : outputs_) {
    if (sameFile(out, other)) throw Error(collision(out, other, "also the "));
  }
  files_.push_back(std::make_unique<AtomicFile>(path));
  outputs_.push_back(std::move(out));
  return *files_.back();
}

void WritePlan::commit() {
  // Checked again just before: a folder made since would stop the renames half-way.
  for (const Entry& out : outputs_) {
    struct stat st {};
    if (::stat(out.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw Error(out.role + " '" + out.path + "' is a directory");
  }
  for (size_t i = files_.size(); i-- > 0;) {
    try {
      files_[i]->commit();
    } catch (...) {
      // Take back the files this run created (a file it replaced cannot be brought back).
      for (size_t j = files_.size(); --j > i;) {
        if (!outputs_[j].exists) ::unlink(outputs_[j].path.c_str());
      }
      throw;
    }
  }
}

Report optimizeFile(const std::string& in, const std::string& out, Options options,
                    const std::string& report_path) {
  if (options.external_data_location.empty())
    options.external_data_location = baseName(out) + ".data";
  WritePlan plan;
  plan.addInput(in, "input model");
  // The report first, so that it is committed last, after the model it describes.
  AtomicFile* report = report_path.empty() ? nullptr : &plan.addOutput(report_path, "report");
  AtomicFile& model_file = plan.addOutput(out, "output");
  if (options.reuse_input_data && realPath(dirOf(in)) != realPath(dirOf(out))) {
    throw Error("reuse-input-data: the output must be in the input's folder ('" + dirOf(in) +
                "'), where its data files are");
  }
  // The model file is a source too: its inline weights stay in it until needed.
  const ModelInput input(std::shared_ptr<const Source>(std::make_shared<FileSource>(in)));
  Report r = optimize(input, model_file, options, fileExternalIO(in, out, &plan));
  if (report != nullptr) {
    const std::string json = r.toJson() + "\n";
    report->write(reinterpret_cast<const uint8_t*>(json.data()), json.size());
  }
  plan.commit();  // data first, so the model never points at missing data
  return r;
}

std::vector<Report> variantsFile(const std::string& in, const std::string& dir,
                                 const std::vector<VariantFile>& plan, const Options& options) {
  if (options.reuse_input_data && realPath(dirOf(in)) != realPath(dir)) {
    throw Error("reuse-input-data: the variants must be in the input's folder ('" + dirOf(in) +
                "'), where its data files are");
  }
  WritePlan files;
  files.addInput(in, "input model");
  // Every model file first: a name that is the input's, or repeated, fails before any work.
  std::map<std::string, AtomicFile*> models;
  for (const VariantFile& v : plan)
    models[v.file] = &files.addOutput(dir + "/" + v.file, "variant " + v.dtype + " output");
  const ModelInput input(std::shared_ptr<const Source>(std::make_shared<FileSource>(in)));
  std::vector<Report> reports = optimizeVariants(
      input, plan, [&models](const VariantFile& v) -> Sink& { return *models.at(v.file); }, options,
      fileExternalIO(in, dir + "/", &files));
  files.commit();  // data first, so no model points at missing data
  return reports;
}

SplitReport splitConstantsFile(const std::string& in, const std::string& prep,
                               const std::string& main, const Options& options) {
  WritePlan plan;
  plan.addInput(in, "input model");
  AtomicFile& prep_file = plan.addOutput(prep, "--prep output");
  AtomicFile& main_file = plan.addOutput(main, "--main output");
  const ModelInput input(std::shared_ptr<const Source>(std::make_shared<FileSource>(in)));
  SplitReport r =
      splitConstants(input, prep_file, main_file, options, fileExternalIO(in, "", &plan));
  plan.commit();
  return r;
}

ModelSummary inspectFile(const std::string& path) {
  return inspect(ModelInput(std::make_shared<FileSource>(path)), fileExternalIO(path, "", nullptr));
}

void validateFile(const std::string& path) {
  validate(ModelInput(std::make_shared<FileSource>(path)), fileExternalIO(path, "", nullptr));
}

std::string modelTextFile(const std::string& path) {
  return modelText(readFileBuffer(path), fileExternalIO(path, "", nullptr));
}

}  // namespace onnxfold
