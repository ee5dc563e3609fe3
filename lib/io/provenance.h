// provenance.h — where a file came from: tool, version, commit, command line, inputs and their
// SHA-256, creation time (STYLE.md rule 5). Every sinkgate output carries this block as root
// attributes (lib/SCHEMA.md, "Provenance attributes").
#pragma once
#include <string>
#include <vector>

#include "lib/io/h5.h"

namespace sg {

struct InputFile {
  std::string path;    // as given on the command line ("-" for stdin)
  std::string sha256;  // lowercase hex of the file's bytes
};

struct Provenance {
  std::string tool;          // e.g. "sg-pairdiff"
  std::string version;       // sg::kVersion of the build
  std::string git_commit;    // sg::kGitCommit of the build
  std::string command_line;  // argv, shell-quoted
  std::string config;        // free text: the effective options or configuration
  std::string created;       // UTC, ISO 8601: "2026-05-01T12:34:56Z"
  /// What decides a model's last bits besides its inputs: the device, the CPU and its thread count,
  /// each run's loss plan (lib/model/runtime.h, arithmetic_text). "" for tools that run no model.
  std::string arithmetic;
  std::vector<InputFile> inputs;

  /// The hash of the input given as `path` ("" when it is not among the inputs).
  std::string sha256_of(const std::string& path) const {
    for (const auto& input : inputs)
      if (input.path == path) return input.sha256;
    return "";
  }
};

/// SHA-256 of a file's bytes as lowercase hex ("-": the copy of stdin, see h5::resolve_input).
/// Throws InputError naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

/// SHA-256 of a byte string as lowercase hex.
std::string sha256_bytes(const std::string& bytes);

/// The current time in UTC as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();

/// A provenance block for this build and this moment; hashes every input (InputError on an
/// unreadable one).
Provenance make_provenance(const std::string& tool, const std::string& command_line,
                           const std::vector<std::string>& inputs, const std::string& config = "");

/// Writes the block as root attributes: tool, version, git_commit, command_line, config,
/// created, input_files, input_sha256; a text or list over 16 KB (a corpus of thousands of files,
/// its command line) as the string dataset /provenance/NAME instead, since HDF5 keeps attributes
/// in a 64 KB object header. Throws OutputError.
void write_provenance(h5::Group& root, const Provenance& provenance);

/// Reads the block back, from the attributes or /provenance/NAME; what is absent stays empty.
/// Throws InputError on a wrong type.
Provenance read_provenance(const h5::Group& root);

}  // namespace sg
