// Tests of lib/io/atomic_file: text files appear whole under their final name, an existing file is
// kept without force and replaced with it, and no temporary file is left behind.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <string>
#include <vector>

#include "lib/base/error.h"
#include "lib/io/atomic_file.h"
#include "tests/support.h"

namespace {

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (const dirent* entry = d ? readdir(d) : nullptr)
    if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
  if (d) closedir(d);
  return names;
}

}  // namespace

TEST_CASE("write_text: a whole file, kept without force, replaced with it, no temporary left") {
  sg_test::Scratch scratch;
  const auto path = scratch / "table.md";
  sg::write_text(path, "first\n", /*force=*/false);
  CHECK(sg_test::slurp(path) == "first\n");
  CHECK_THROWS_WITH(sg::write_text(path, "second\n", false), Catch::Contains("exists"));
  CHECK(sg_test::slurp(path) == "first\n");
  sg::write_text(path, "second\n", /*force=*/true);
  CHECK(sg_test::slurp(path) == "second\n");
  CHECK(names_in(scratch.dir) == std::vector<std::string>{"table.md"});
  CHECK_THROWS_AS(sg::write_text(scratch / "no/such/folder/x.md", "x", true), sg::OutputError);
}

TEST_CASE("temporary_for: beside the path, named by this process, a dead writer's temporary is removed") {
  sg_test::Scratch scratch;
  const auto path = scratch / "run.h5";
  const auto temporary = sg::temporary_for(path);
  CHECK(temporary == path + ".tmp." + std::to_string(::getpid()));
  // pid 999999999 cannot exist (above the kernel's pid_max): its temporary is stale.
  { std::ofstream(path + ".tmp.999999999") << "half"; }
  sg::temporary_for(path);
  CHECK_FALSE(sg_test::exists(path + ".tmp.999999999"));
  { std::ofstream(temporary) << "whole"; }
  sg::move_into_place(temporary, path, /*force=*/false);
  CHECK(sg_test::slurp(path) == "whole");
  CHECK_FALSE(sg_test::exists(temporary));
}
