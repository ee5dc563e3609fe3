// error.h — the typed exceptions of the library and the exit code each maps to.
// The library throws; only the tool wrapper (cli.cpp) catches, prints and exits.
#pragma once
#include <stdexcept>
#include <string>

namespace sg {

/// Documented exit codes of every sg-* tool.
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,  // a bug or an unexpected library failure
  kExitUsage = 2,     // bad command line or option value
  kExitInput = 3,     // missing, unreadable, malformed or wrong-kind input file
  kExitOutput = 4,    // output exists (without --force) or is not writable
  kExitNumeric = 5,   // training diverged (non-finite loss)
  kExitInterrupted = 6,  // stopped by SIGTERM or SIGINT after writing a checkpoint (resume it)
  kExitDistributed = 7,  // data-parallel training: a rank could not connect, was lost, or disagreed
};

/// Base class: a message, an optional hint for the user, and an exit code.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::string hint = "", int exit_code = kExitInternal)
      : std::runtime_error(message), hint_(std::move(hint)), exit_code_(exit_code) {}
  const std::string& hint() const { return hint_; }
  int exit_code() const { return exit_code_; }

 private:
  std::string hint_;
  int exit_code_;
};

/// A bad option or configuration value.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), kExitUsage) {}
};

/// An input file that is missing, unreadable, malformed or of the wrong kind.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), kExitInput) {}
};

/// An output that exists or cannot be written.
class OutputError : public Error {
 public:
  explicit OutputError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), kExitOutput) {}
};

/// A computation that left the finite numbers (a diverged loss).
class NumericError : public Error {
 public:
  explicit NumericError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), kExitNumeric) {}
};

/// A run stopped by a signal after it wrote a checkpoint.
class InterruptedError : public Error {
 public:
  explicit InterruptedError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), kExitInterrupted) {}
};

/// The reader of stdout went away (`sg-tabulate … | head`): not an error, as for any Unix filter;
/// the tool stops writing and exits 0 without a message.
class ReaderGone : public Error {
 public:
  ReaderGone() : Error("the reader of stdout closed the pipe", "", kExitOk) {}
};

/// Data-parallel training failed across processes: a rank could not connect, was lost, or the
/// ranks disagree.
class DistributedError : public Error {
 public:
  explicit DistributedError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), kExitDistributed) {}
};

}  // namespace sg
