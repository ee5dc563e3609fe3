// support.h — helpers the tests share: scratch folders, file checks, shell quoting, and the
// reference models of tests/survey_reference.py.
//
// Folders are removed with nftw, not std::filesystem::remove_all: the torch wheel's libtorch.so
// exports its own std::filesystem symbols, and remove_all crashes when it binds to them.
#pragma once
#include <catch2/catch.hpp>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/provenance.h"

namespace sg_test {

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

#if defined(SG_PYTHON) && defined(SG_TEST_SOURCE_DIR)
/// The reference models of tests/survey_reference.py, made once per version of the script and
/// kept in the test's working folder (ctest runs each test case as its own process; test_survey
/// and test_pretrained share the folder).
inline const std::string& survey_fixtures() {
  static const std::string dir = [] {
    const std::string script = std::string(SG_TEST_SOURCE_DIR) + "/survey_reference.py";
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
    const std::string final_dir = std::string(cwd) + "/survey-fixtures-" + sg::sha256_file(script).substr(0, 12);
    if (exists(final_dir + "/done")) return final_dir;
    const std::string temporary = make_folder(std::string(cwd) + "/survey-fixtures-tmp-XXXXXX");
    const std::string command = shell_quote(SG_PYTHON) + " " + shell_quote(script) + " models " + shell_quote(temporary);
    INFO("reference command: " << command);
    REQUIRE(std::system(command.c_str()) == 0);
    std::ofstream(temporary + "/done") << "ok\n";
    if (std::rename(temporary.c_str(), final_dir.c_str()) != 0) remove_tree(temporary);  // another test won the race
    REQUIRE(exists(final_dir + "/done"));
    return final_dir;
  }();
  return dir;
}
#endif

}  // namespace sg_test
