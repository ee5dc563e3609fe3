// Tests of lib/base/paths: the cache folder's precedence of variables, and folder names of paths.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "lib/base/paths.h"
#include "tests/support.h"

TEST_CASE("cache_folder: SINKGATE_CACHE, else XDG_CACHE_HOME/sinkgate, else ~/.cache/sinkgate") {
  sg_test::ScopedEnv home("HOME", "/home/someone");
  {
    sg_test::ScopedEnv cache("SINKGATE_CACHE", "/data/cache");
    sg_test::ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(sg::cache_folder() == "/data/cache");
  }
  {
    sg_test::ScopedEnv cache("SINKGATE_CACHE", nullptr);
    sg_test::ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(sg::cache_folder() == "/xdg/sinkgate");
  }
  sg_test::ScopedEnv cache("SINKGATE_CACHE", nullptr);
  sg_test::ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  CHECK(sg::cache_folder() == "/home/someone/.cache/sinkgate");
}

TEST_CASE("directory_of: the folder part, '.' for a bare name, '/' in the root") {
  CHECK(sg::directory_of("runs/a/run.h5") == "runs/a");
  CHECK(sg::directory_of("run.h5") == ".");
  CHECK(sg::directory_of("/run.h5") == "/");
}
