// Tests of lib/base/paths: the cache folder's precedence of variables, and folder names of paths.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "lib/base/paths.h"

namespace {

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

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("cache_folder: SINKGATE_CACHE, else XDG_CACHE_HOME/sinkgate, else ~/.cache/sinkgate") {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv cache("SINKGATE_CACHE", "/data/cache");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(sg::cache_folder() == "/data/cache");
  }
  {
    ScopedEnv cache("SINKGATE_CACHE", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(sg::cache_folder() == "/xdg/sinkgate");
  }
  ScopedEnv cache("SINKGATE_CACHE", nullptr);
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  CHECK(sg::cache_folder() == "/home/someone/.cache/sinkgate");
}

TEST_CASE("directory_of: the folder part, '.' for a bare name, '/' in the root") {
  CHECK(sg::directory_of("runs/a/run.h5") == "runs/a");
  CHECK(sg::directory_of("run.h5") == ".");
  CHECK(sg::directory_of("/run.h5") == "/");
}
