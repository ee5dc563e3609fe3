// support.h — helpers the tests share: scratch folders, file checks, shell quoting, hand-made
// safetensors and token files, a run file's reading error, and the reference models of
// tests/survey_reference.py.
//
// Folders are removed with nftw, not std::filesystem::remove_all: the torch wheel's libtorch.so
// exports its own std::filesystem symbols, and remove_all crashes when it binds to them.
#pragma once
#include <catch2/catch.hpp>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/base/error.h"
#include "lib/io/provenance.h"
#include "lib/run/run_file.h"
#include "lib/text/token_file.h"

namespace sg_test {

/// Sets (or with nullptr unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) setenv(name, value, 1); else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1); else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

/// True, after printing "SKIPPED: …" (ctest reports the test as skipped), when the tests' corpus
/// (SG_TEST_CORPUS: the default corpus's tutorial/ folder) is missing on this machine.
inline bool skip_without_corpus() {
  struct stat info {};
  if (stat(SG_TEST_CORPUS, &info) == 0 && S_ISDIR(info.st_mode)) return false;
  std::printf("SKIPPED: the tests' corpus %s is missing (Debian's python3.11-doc; or configure with "
              "-DSG_DEFAULT_CORPUS=DIR)\n", SG_TEST_CORPUS);
  std::fflush(stdout);
  return true;
}

/// Whether precision "auto" trains in bf16 on this CPU, by the kernel's account rather than sg's
/// (__builtin_cpu_supports): /proc/cpuinfo lists avx512_bf16 with avx512f, or amx_bf16 with
/// amx_tile, and SINKGATE_CPU_KERNELS does not cap the kernels at AVX2.
inline bool cpu_trains_bf16_by_default() {
  const char* cap = std::getenv("SINKGATE_CPU_KERNELS");
  if (cap && std::string(cap) == "avx2") return false;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    bool avx512f = false, avx512_bf16 = false, amx_bf16 = false, amx_tile = false;
    for (std::string flag; words >> flag;) {
      avx512f |= flag == "avx512f";
      avx512_bf16 |= flag == "avx512_bf16";
      amx_bf16 |= flag == "amx_bf16";
      amx_tile |= flag == "amx_tile";
    }
    return (avx512f && avx512_bf16) || (amx_bf16 && amx_tile);
  }
  return false;
}

/// Removes a folder and everything in it (a missing folder is not an error).
inline void remove_tree(const std::string& dir) {
  nftw(dir.c_str(), [](const char* path, const struct stat*, int, struct FTW*) { return std::remove(path); }, 16,
       FTW_DEPTH | FTW_PHYS);
}

inline bool exists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

/// A new folder named by a mkdtemp pattern (ending in XXXXXX).
inline std::string make_folder(const std::string& pattern) {
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  REQUIRE(mkdtemp(buffer.data()) != nullptr);
  return buffer.data();
}

/// A fresh folder under $TMPDIR (or /tmp) for one test, removed with its contents afterwards.
struct Scratch {
  std::string dir;
  explicit Scratch(const std::string& name = "sg-test") {
    const char* tmp = std::getenv("TMPDIR");
    dir = make_folder(std::string(tmp && *tmp ? tmp : "/tmp") + "/" + name + "-XXXXXX");
  }
  ~Scratch() { remove_tree(dir); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::string operator/(const std::string& name) const { return dir + "/" + name; }
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// One argument for /bin/sh, in single quotes.
inline std::string shell_quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The InputError's message when read_run_state reads the run file `path`, else "(no error)".
inline std::string error_of(const std::string& path) {
  try {
    sg::read_run_state(path);
  } catch (const sg::InputError& error) {
    return error.what();
  }
  return "(no error)";
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  REQUIRE(out.good());
}

/// The raw little-endian bytes of `values`.
template <typename T>
std::string raw(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// A safetensors file by hand: the 8-byte little-endian header length, the header, the data.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return bytes + header + data;
}

/// A valid safetensors file: a (2, 3) F32 "w" = 1 … 6, a (2) F16 "h" = 1.5, -2, a (2) BF16 "b" =
/// 1.5, -3, a (3) I64 "i" = -3, 0, 2^40, a scalar F32 "s" = 0.25 and an empty (0, 4) F32 "e".
inline std::string valid_safetensors() {
  const std::string f32 = raw<float>({1, 2, 3, 4, 5, 6});
  const std::string f16 = raw<uint16_t>({0x3E00, 0xC000});  // 1.5, -2
  const std::string bf16 = raw<uint16_t>({0x3FC0, 0xC040});  // 1.5, -3
  const std::string i64 = raw<int64_t>({-3, 0, 1LL << 40});
  const std::string scalar = raw<float>({0.25f});
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("h":{"dtype":"F16","shape":[2],"data_offsets":[24,28]},)"
      R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[28,32]},)"
      R"("i":{"dtype":"I64","shape":[3],"data_offsets":[32,56]},)"
      R"("s":{"dtype":"F32","shape":[],"data_offsets":[56,60]},)"
      R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[60,60]}}   )";  // padded with spaces, as allowed
  return safetensors_bytes(header, f32 + f16 + bf16 + i64 + scalar);
}

/// A token file at `path` whose token at stream position p is p % 50000, with the end-of-text id
/// 50256 at every 97th position (documents of 96 tokens); the first `val_tokens` are validation.
inline void write_counting_tokens(const std::string& path, int64_t documents, int64_t val_tokens) {
  sg::TokenWriter writer(path, /*force=*/true, val_tokens, "test", 50257, 50256);
  int64_t position = 0;
  for (int64_t d = 0; d < documents; ++d) {
    std::vector<int32_t> tokens(96);
    for (auto& t : tokens) t = static_cast<int32_t>(position++ % 50000);
    ++position;  // the end-of-text id takes one position
    writer.add_document(tokens);
  }
  writer.commit();
}

/// A token file at `path` of one document of `total` - 1 uniform random ids below vocab - 1 (a
/// fixed generator), the end-of-text id vocab - 1 closing it; the first `val_tokens` are validation.
inline void write_random_tokens(const std::string& path, int64_t vocab, int64_t total, int64_t val_tokens,
                                uint64_t seed = 1) {
  sg::TokenWriter writer(path, /*force=*/true, val_tokens, "test", vocab, vocab - 1);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  std::vector<int32_t> ids(static_cast<size_t>(total - 1));
  for (auto& id : ids) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // an LCG: portable, fixed
    id = static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(vocab - 1));
  }
  writer.add_document(ids);
  writer.commit();
}

#if defined(SG_PYTHON) && defined(SG_TEST_SOURCE_DIR)
/// The fixtures that `SG_PYTHON tests/SCRIPT COMMAND DIR` makes, made once per version of the
/// script and kept in the test's working folder under NAME-<hash> (ctest runs each test case as
/// its own process; test executables of the same working folder share it).
inline std::string python_fixtures(const std::string& script_name, const std::string& command, const std::string& name) {
  const std::string script = std::string(SG_TEST_SOURCE_DIR) + "/" + script_name;
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
  const std::string final_dir = std::string(cwd) + "/" + name + "-" + sg::sha256_file(script).substr(0, 12);
  if (exists(final_dir + "/done")) return final_dir;
  const std::string temporary = make_folder(std::string(cwd) + "/" + name + "-tmp-XXXXXX");
  const std::string line = shell_quote(SG_PYTHON) + " " + shell_quote(script) + " " + command + " " + shell_quote(temporary);
  INFO("reference command: " << line);
  REQUIRE(std::system(line.c_str()) == 0);
  std::ofstream(temporary + "/done") << "ok\n";
  if (std::rename(temporary.c_str(), final_dir.c_str()) != 0) remove_tree(temporary);  // another test won the race
  REQUIRE(exists(final_dir + "/done"));
  return final_dir;
}

/// The reference models of tests/survey_reference.py (test_survey and test_pretrained).
inline const std::string& survey_fixtures() {
  static const std::string dir = python_fixtures("survey_reference.py", "models", "survey-fixtures");
  return dir;
}

/// The decoder-family models of tests/survey_modern_reference.py (test_families).
inline const std::string& families_fixtures() {
  static const std::string dir = python_fixtures("survey_modern_reference.py", "models", "families-fixtures");
  return dir;
}

/// The models, task files and answers of tests/zero_shot_reference.py (test_zero_shot).
inline const std::string& zero_shot_fixtures() {
  static const std::string dir = python_fixtures("zero_shot_reference.py", "fixtures", "zero-shot-fixtures");
  return dir;
}
#endif

}  // namespace sg_test
