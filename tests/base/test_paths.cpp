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

TEST_CASE("name_beside: the suffix added, a name too long for it shortened to 255 bytes by its head and a hash") {
  CHECK(sg::name_beside("runs/run.h5", ".lock") == "runs/run.h5.lock");
  CHECK(sg::name_beside("run.h5", ".lock") == "run.h5.lock");
  const std::string fits(250, 'r');
  CHECK(sg::name_beside("runs/" + fits, ".lock") == "runs/" + fits + ".lock");  // a name of 255 bytes
  for (const size_t length : {251, 255}) {
    const std::string name(length - 3, 'r');
    const std::string beside = sg::name_beside("runs/" + name + ".h5", ".lock");
    INFO(beside);
    CHECK(beside.size() - 5 == 255);
    CHECK(beside.compare(0, 5 + 241, "runs/" + name.substr(0, 241)) == 0);
    CHECK(beside.substr(beside.size() - 14, 1) == "~");
    CHECK(sg::name_beside("runs/" + name + ".h5", ".lock") == beside);  // always the same name
    CHECK(sg::name_beside("runs/" + name + ".h6", ".lock") != beside);  // another name, another hash
  }
  // The head is cut at a character boundary: a 2-byte character straddling the cut is left out whole.
  std::string utf8 = std::string(240, 'a');
  for (int i = 0; i < 10; ++i) utf8 += "\xc3\xa9";
  const std::string beside = sg::name_beside(utf8, ".lock");
  CHECK(beside.size() <= 255);
  CHECK((static_cast<unsigned char>(beside[beside.find('~') - 1]) & 0xC0) != 0xC0);  // no lead byte without its tail
}
