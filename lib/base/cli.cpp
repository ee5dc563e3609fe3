// cli.cpp — CLI11 behind the Parser interface, and the error-reporting wrapper.
#include "lib/base/cli.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <CLI/CLI.hpp>

#include <iostream>
#include <sstream>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/paths.h"
#include "lib/base/text.h"
#include "sg/version.h"

namespace sg::cli {
namespace {

CLI::Option* as_option(void* p) { return static_cast<CLI::Option*>(p); }

std::string quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\"'\\$`") == std::string::npos) return arg;
  std::string out = "'";
  for (char c : arg) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Parser::Parser(std::string tool, const std::string& description)
    : tool_(std::move(tool)), app_(std::make_unique<CLI::App>(description, tool_)) {
  app_->set_version_flag("--version", std::string(kVersion) + " (" + kGitCommit + ")");
  app_->get_formatter()->column_width(34);
}

Parser::~Parser() = default;

void Parser::common(CommonOptions& o, unsigned which, const std::string& output) {
  common_ = &o;
  common_flags_ = which;
  // An output without a default ('-' for stdout) is required, and --help says so.
  if (which & kOutput)
    option("-o,--output", o.output, o.output.empty() ? output : output + " ('-' for stdout)",
           /*required=*/o.output.empty());
  if (which & kForce) flag("--force", o.force, "overwrite an existing output");
  if (which & kSeed) option("--seed", o.seed, "random seed");
  if (which & kDevice) option("--device", o.device, "cpu, cuda or cuda:N");
  if (which & kThreads) option("--threads", o.threads, "CPU threads (0: all cores)");
  if (which & kLogLevel) {
    option("--log-level", o.log_level, join(log::level_names(), ", ") + " (quiet: warnings only)");
    choices(log::level_names());
  }
  if (which & kConfig) option("--config", o.config, "configuration file of 'key = value' lines");
}

void Parser::option(const std::string& names, std::string& value, const std::string& help, bool required) {
  last_ = app_->add_option(names, value, help)->capture_default_str()->required(required);
}
void Parser::option(const std::string& names, int64_t& value, const std::string& help, bool required) {
  last_ = app_->add_option(names, value, help)->capture_default_str()->required(required);
}
void Parser::option(const std::string& names, double& value, const std::string& help, bool required) {
  last_ = app_->add_option(names, value, help)->capture_default_str()->required(required);
}
void Parser::option(const std::string& names, std::vector<std::string>& values, const std::string& help,
                    bool required) {
  auto* added = app_->add_option(names, values, help)->capture_default_str()->required(required);
  // A repeatable named option takes one value per occurrence, so it cannot swallow the
  // positional inputs after it ("--set a=1 in.h5").
  if (!names.empty() && names[0] == '-')
    added->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  last_ = added;
}
void Parser::list(const std::string& names, std::vector<std::string>& values, const std::string& help,
                  bool required) {
  // One value an occurrence, split at commas after parsing (CLI11's own delimiter lets a repeat
  // swallow the positionals after it).
  option(names, values, help, required);
  lists_.push_back(&values);
}
void Parser::renamed(const std::string& old_name, const std::string& new_name) {
  renamed_.emplace_back(old_name, new_name);
}
void Parser::flag(const std::string& names, bool& value, const std::string& help) {
  last_ = app_->add_flag(names, value, help);
}
void Parser::evaluation_batches(int64_t& batches, int64_t& batch_size, int64_t& context, int64_t& eval_seed) {
  option("--batches", batches, "evaluation batches (the same in sg-inject and sg-probe)");
  option("--batch-size", batch_size, "sequences per batch");
  option("--context", context, "tokens per sequence (0: min(512, the model's context))");
  option("--eval-seed", eval_seed, "validation stream of the batches (-1: the run's eval_seed)");
}

void Parser::choices(const std::vector<std::string>& allowed) {
  if (last_) as_option(last_)->check(CLI::IsMember(allowed));
}
void Parser::footer(const std::string& text) { app_->footer(text); }

bool Parser::parse(int argc, char** argv) {
  command_line_.clear();
  for (int i = 0; i < argc; ++i) command_line_ += (i ? " " : "") + quote(argv[i]);
  // Old spellings become the new ones before CLI11 sees them ("--old X", "--old=X"), up to "--".
  std::vector<std::string> args(argv, argv + argc);
  std::vector<std::string> warnings;
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i)
    for (const auto& [old_name, new_name] : renamed_) {
      const bool bare = args[i] == old_name;
      if (!bare && args[i].compare(0, old_name.size() + 1, old_name + "=") != 0) continue;
      args[i] = new_name + args[i].substr(old_name.size());
      warnings.push_back(old_name + " is now spelled " + new_name + "; the old spelling goes in the next release");
      break;
    }
  std::vector<char*> pointers;
  for (auto& arg : args) pointers.push_back(arg.data());
  try {
    app_->parse(static_cast<int>(pointers.size()), pointers.data());
  } catch (const CLI::CallForHelp&) {
    std::cout << app_->help();
    return false;
  } catch (const CLI::CallForVersion&) {
    std::cout << tool_ << " " << kVersion << " (" << kGitCommit << ")\n";
    return false;
  } catch (const CLI::ExtrasError& error) {
    // "The following arguments were not expected: --iterations 50": a hint for the first option.
    std::string hint;
    std::istringstream words(std::string(error.what()).substr(std::string(error.what()).find(':') + 1));
    for (std::string word; words >> word;) {
      if (word.size() < 3 || word.compare(0, 2, "--") != 0) continue;
      const std::string name = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
      if (unknown_hint_) hint = unknown_hint_(name);
      if (hint.empty()) {
        std::vector<std::string> known;
        for (const auto* option : app_->get_options())
          for (const auto& long_name : option->get_lnames()) known.push_back(long_name);
        const auto guess = closest(name, known);
        if (!guess.empty()) hint = "did you mean --" + guess + "?";
      }
      break;
    }
    throw UsageError(error.what(), (hint.empty() ? "" : hint + "; ") + "run '" + tool_ + " --help' for the options");
  } catch (const CLI::ParseError& error) {
    throw UsageError(error.what(), "run '" + tool_ + " --help' for the options");
  }
  for (auto* values : lists_) *values = split_lists(*values);
  if (common_ && (common_flags_ & kLogLevel)) log::set_level(common_->log_level);
  for (const auto& warning : warnings) log::warn(warning);
  return true;
}

bool Parser::given(const std::string& name) const { return app_->count(name) > 0; }

namespace {

/// What a tool wrote to stdout may still sit in a buffer: flushed here, where a failed write (a
/// full disk, /dev/full) is an OutputError like any other, instead of being lost at exit with
/// success reported. A reader that went away (EPIPE) is ReaderGone.
void flush_stdout() {
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout);
  const int error = errno;
  if (!failed) return;
  if (error == EPIPE) throw ReaderGone();
  throw OutputError(stdout_failure_message(error));
}

}  // namespace

int run_tool(Parser& parser, int argc, char** argv, const std::function<void()>& body) {
  // A closed pipe is an error of the write (EPIPE), not a signal that kills the process: a log
  // reader that goes away (`sg-train … 2>&1 | head`) must not stop a training run, and a data
  // writer whose reader has gone stops cleanly (ReaderGone), its temporary files removed.
  std::signal(SIGPIPE, SIG_IGN);
  log::tool() = parser.tool();
  try {
    if (!parser.parse(argc, argv)) {
      flush_stdout();  // --help and --version print to stdout too
      return kExitOk;
    }
    body();
    flush_stdout();
    return kExitOk;
  } catch (const ReaderGone&) {
    return kExitOk;
  } catch (const Error& error) {
    std::cerr << parser.tool() << ": error: " << error.what() << "\n";
    if (!error.hint().empty()) std::cerr << "hint: " << error.hint() << "\n";
    return error.exit_code();
  } catch (const std::exception& error) {
    std::cerr << parser.tool() << ": error: " << error.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace sg::cli
