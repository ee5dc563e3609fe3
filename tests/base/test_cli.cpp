// Tests of lib/base/cli and lib/base/log: list options, old spellings, the log level the wrapper
// sets, and warnings that --log-level quiet shows and error hides.
#include <catch2/catch.hpp>

#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"

namespace {

/// Runs the parser over args (the tool's name first) and returns what the run wrote to stderr.
struct Captured {
  int code = 0;
  std::string err;
};

Captured run(sg::cli::Parser& parser, std::vector<std::string> args, const std::function<void()>& body) {
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  std::ostringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  Captured captured;
  captured.code = sg::cli::run_tool(parser, static_cast<int>(argv.size()), argv.data(), body);
  std::cerr.rdbuf(old);
  captured.err = err.str();
  return captured;
}

}  // namespace

TEST_CASE("a list option takes comma lists and repeats alike") {
  std::vector<std::string> arms;
  sg::cli::Parser parser("sg-test", "test");
  parser.list("--arms", arms, "arms");
  std::vector<std::string> inputs;
  parser.option("inputs", inputs, "inputs");
  const auto captured = run(parser, {"sg-test", "--arms", "a,b", "--arms", "c", "in.h5"}, [] {});
  CHECK(captured.code == 0);
  CHECK(arms == std::vector<std::string>{"a", "b", "c"});
  CHECK(inputs == std::vector<std::string>{"in.h5"});  // a repeat never swallows the positionals
}

/// A tool with --vocab, its old spelling --tokenizer, and --log-level.
struct VocabTool {
  std::string vocab;
  sg::cli::CommonOptions common;
  sg::cli::Parser parser{"sg-test", "test"};
  VocabTool() {
    parser.option("--vocab", vocab, "vocabulary");
    parser.renamed("--tokenizer", "--vocab");
    parser.common(common, sg::cli::kLogLevel);
  }
};

TEST_CASE("an old spelling works with a warning naming the new one, and --help does not show it") {
  VocabTool spaced;
  auto captured = run(spaced.parser, {"sg-test", "--tokenizer", "v.json"}, [] {});
  CHECK(captured.code == 0);
  CHECK(spaced.vocab == "v.json");
  CHECK(captured.err.find("sg-test: warning: --tokenizer is now spelled --vocab") != std::string::npos);

  VocabTool joined;
  captured = run(joined.parser, {"sg-test", "--tokenizer=w.json", "--log-level", "error"}, [] {});
  CHECK(joined.vocab == "w.json");
  CHECK(captured.err.empty());  // --log-level error hides warnings too

  VocabTool help;
  std::ostringstream out;
  auto* old = std::cout.rdbuf(out.rdbuf());
  run(help.parser, {"sg-test", "--help"}, [] {});
  std::cout.rdbuf(old);
  CHECK(out.str().find("--vocab") != std::string::npos);
  CHECK(out.str().find("--tokenizer") == std::string::npos);
}

TEST_CASE("the wrapper sets the log level: quiet keeps warnings, hides progress, error hides both") {
  for (const auto& [level, warning_shown, info_shown] :
       std::vector<std::tuple<std::string, bool, bool>>{{"debug", true, true}, {"info", true, true},
                                                         {"quiet", true, false}, {"error", false, false}}) {
    INFO(level);
    sg::cli::CommonOptions common;
    sg::cli::Parser parser("sg-test", "test");
    parser.common(common, sg::cli::kLogLevel);
    const auto captured = run(parser, {"sg-test", "--log-level", level}, [] {
      sg::log::warn("a run is unfinished");
      sg::log::info("progress");
    });
    CHECK(captured.code == 0);
    CHECK((captured.err.find("sg-test: warning: a run is unfinished") != std::string::npos) == warning_shown);
    CHECK((captured.err.find("progress") != std::string::npos) == info_shown);
  }
  sg::log::set_level("info");
}

TEST_CASE("a number option refuses trailing junk, naming the option") {
  int64_t steps = 0;
  sg::cli::Parser parser("sg-test", "test");
  parser.option("--steps", steps, "steps");
  const auto captured = run(parser, {"sg-test", "--steps", "5x"}, [] {});
  CHECK(captured.code == sg::kExitUsage);
  CHECK(captured.err.find("--steps") != std::string::npos);
}
