// Tests of lib/base/environment: SINKGATE_* names, and the old SG_* names accepted with a warning
// that names the new one.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "lib/base/environment.h"
#include "lib/base/log.h"

namespace {

/// What `body` writes to stderr.
template <typename Body>
std::string stderr_of(Body body) {
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  body();
  std::cerr.rdbuf(old);
  return captured.str();
}

}  // namespace

TEST_CASE("sinkgate_env: SINKGATE_ first, the old SG_ name with one warning naming the new one") {
  sg::log::set_level("info");
  unsetenv("SINKGATE_TEST_SETTING");
  unsetenv("SG_TEST_SETTING");
  CHECK(sg::sinkgate_env("TEST_SETTING") == nullptr);
  CHECK(sg::sinkgate_env_name("TEST_SETTING") == "SINKGATE_TEST_SETTING");
  setenv("SG_TEST_SETTING", "old", 1);
  std::string value;
  const auto warning = stderr_of([&] { value = sg::sinkgate_env("TEST_SETTING"); });
  CHECK(value == "old");
  CHECK_THAT(warning, Catch::Contains("SG_TEST_SETTING") && Catch::Contains("use SINKGATE_TEST_SETTING"));
  CHECK(sg::sinkgate_env_name("TEST_SETTING") == "SG_TEST_SETTING");
  CHECK(stderr_of([&] { sg::sinkgate_env("TEST_SETTING"); }).empty());  // once a process
  setenv("SINKGATE_TEST_SETTING", "new", 1);
  CHECK(std::string(sg::sinkgate_env("TEST_SETTING")) == "new");  // the new name wins
  CHECK(sg::sinkgate_env_name("TEST_SETTING") == "SINKGATE_TEST_SETTING");
  unsetenv("SINKGATE_TEST_SETTING");
  unsetenv("SG_TEST_SETTING");
}
