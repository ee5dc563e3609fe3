// cli.h — the shared command-line vocabulary and the wrapper every tool's main() calls.
// The only module that sees CLI11; tools register options through Parser.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace sg::cli {

/// Options shared by the tools, defined once (STYLE.md rule 3).
struct CommonOptions {
  std::string output;            // -o/--output
  bool force = false;            // --force: overwrite an existing output
  int64_t seed = 0;              // --seed
  std::string device = "cpu";    // --device cpu | cuda | cuda:N
  int64_t threads = 0;           // --threads (0: all cores)
  std::string log_level = "info";  // --log-level error | quiet | info | debug
  std::string config;            // --config FILE
};

/// Common options whose output defaults to "-": the result table goes to stdout unless -o names a file.
inline CommonOptions to_stdout() {
  CommonOptions options;
  options.output = "-";
  return options;
}

/// Which common options a tool registers.
enum CommonFlag : unsigned {
  kOutput = 1u << 0,
  kForce = 1u << 1,
  kSeed = 1u << 2,
  kDevice = 1u << 3,
  kThreads = 1u << 4,
  kLogLevel = 1u << 5,
  kConfig = 1u << 6,
};

class Parser {
 public:
  /// tool: the executable's name; description: one paragraph for --help.
  Parser(std::string tool, const std::string& description);
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  /// Registers the common options in `which`; `output` says what -o names (a folder for sg-export).
  void common(CommonOptions& options, unsigned which, const std::string& output = "output file");
  /// Options and positionals ("--tier", "-o,--output" or "input" for a positional); the
  /// current value of the variable is shown as the default in --help.
  void option(const std::string& names, std::string& value, const std::string& help, bool required = false);
  void option(const std::string& names, int64_t& value, const std::string& help, bool required = false);
  void option(const std::string& names, double& value, const std::string& help, bool required = false);
  void option(const std::string& names, std::vector<std::string>& values, const std::string& help,
              bool required = false);
  /// A list option: comma lists and repeats both add items ("--arms a,b --arms c" gives a, b, c);
  /// a positional list takes every remaining argument.
  void list(const std::string& names, std::vector<std::string>& values, const std::string& help,
            bool required = false);
  void flag(const std::string& names, bool& value, const std::string& help);
  /// An old spelling of an option that still works for one release: "--tokenizer X" is read as
  /// "--vocab X" with a warning naming the new spelling. Not shown in --help.
  void renamed(const std::string& old_name, const std::string& new_name);
  /// The fixed evaluation batches that sg-inject and sg-probe share (instruments/injection.h,
  /// evaluation_batches): --batches, --batch-size, --context (0: min(512, the model's context)) and
  /// --eval-seed (-1: the run's eval_seed), registered alike in both tools.
  void evaluation_batches(int64_t& batches, int64_t& batch_size, int64_t& context, int64_t& eval_seed);
  /// Restricts the last registered option to these values.
  void choices(const std::vector<std::string>& allowed);
  /// Text shown after the options in --help (environment variables, notes).
  void footer(const std::string& text);
  /// A tool's own hint for an unknown option "--NAME" (e.g. sg-train: "use --set NAME=VALUE" for a
  /// configuration field); return "" to fall back to the nearest known option.
  void unknown_option_hint(std::function<std::string(const std::string& name)> hint) { unknown_hint_ = std::move(hint); }

  const std::string& tool() const { return tool_; }
  /// The command line as given (provenance).
  const std::string& command_line() const { return command_line_; }

  /// Parses argv; returns false when --help or --version was answered (exit 0).
  bool parse(int argc, char** argv);
  /// After parse: whether the option named `name` ("--tier") was on the command line.
  bool given(const std::string& name) const;
  /// The common options registered by common(), or null; which ones (CommonFlag bits).
  const CommonOptions* common_options() const { return common_; }
  unsigned common_flags() const { return common_flags_; }

 private:
  std::string tool_;
  std::string command_line_;
  std::unique_ptr<CLI::App> app_;
  void* last_ = nullptr;  // the CLI::Option registered last
  CommonOptions* common_ = nullptr;
  unsigned common_flags_ = 0;
  std::vector<std::pair<std::string, std::string>> renamed_;  // (old, new)
  std::vector<std::vector<std::string>*> lists_;  // list options, split at commas after parsing
  std::function<std::string(const std::string&)> unknown_hint_;
};

/// Parses, sets the log level from --log-level (where the tool has it) and the name warnings
/// carry, then runs body. Every sg::Error is printed as "TOOL: error: MESSAGE" (and "hint: …")
/// on stderr and mapped to its exit code, any other exception as an internal error (exit 1);
/// returns the exit code. Tools that run a model use sg::run_torch_tool (lib/model/runtime.h),
/// which also sets the threads and the heap and reports LibTorch's errors without their C++
/// backtrace. No tool sets these itself.
int run_tool(Parser& parser, int argc, char** argv, const std::function<void()>& body);

}  // namespace sg::cli
