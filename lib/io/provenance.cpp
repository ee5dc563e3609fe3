// provenance.cpp — SHA-256 through OpenSSL's EVP interface, UTC time, the attribute block.
#include "lib/io/provenance.h"

#include <openssl/evp.h>

#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "sg/version.h"

namespace sg {
namespace {

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

DigestContext new_context() {
  DigestContext context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
    throw Error("OpenSSL: cannot start a SHA-256 digest");
  return context;
}

std::string finish(EVP_MD_CTX* context) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context, digest, &size) != 1) throw Error("OpenSSL: cannot finish a SHA-256 digest");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

// HDF5 keeps an object's attributes in its header, at most 64 KB in all: a long text or list (the
// command line or input files of a corpus of thousands of files) goes to a dataset
// /provenance/NAME instead, and readers look in both places.
constexpr size_t kAttributeBytes = 16 << 10;
constexpr const char* kProvenanceGroup = "provenance";

size_t total_bytes(const std::vector<std::string>& values) {
  size_t bytes = 0;
  for (const auto& value : values) bytes += value.size() + 1;
  return bytes;
}

void put_list(h5::Group& root, const std::string& name, const std::vector<std::string>& values) {
  if (total_bytes(values) <= kAttributeBytes) return root.set_attribute(name, values);
  root.require_group(kProvenanceGroup).write_strings(name, values);
}

void put_text(h5::Group& root, const std::string& name, const std::string& value) {
  if (value.size() <= kAttributeBytes) return root.set_attribute(name, value);
  root.require_group(kProvenanceGroup).write_strings(name, {value});
}

bool has_list(const h5::Group& root, const std::string& name) {
  return root.has_attribute(name) || root.is_dataset(std::string(kProvenanceGroup) + "/" + name);
}

std::vector<std::string> get_list(const h5::Group& root, const std::string& name) {
  if (root.has_attribute(name)) return root.attribute_strings(name);
  return root.dataset(std::string(kProvenanceGroup) + "/" + name).read_strings();
}

std::string optional_string(const h5::Group& root, const std::string& name) {
  if (root.has_attribute(name)) return root.attribute_string(name);
  if (!root.is_dataset(std::string(kProvenanceGroup) + "/" + name)) return std::string();
  const auto values = get_list(root, name);
  if (values.size() != 1) throw InputError(root.file() + ": " + kProvenanceGroup + "/" + name + " is not one text");
  return values.front();
}

}  // namespace

std::string sha256_bytes(const std::string& bytes) {
  auto context = new_context();
  EVP_DigestUpdate(context.get(), bytes.data(), bytes.size());
  return finish(context.get());
}

std::string sha256_file(const std::string& path) {
  const std::string local = h5::resolve_input(path);
  auto file = open_input(local, Fifo::refuse, path == "-" ? "stdin's copy" : "");
  auto context = new_context();
  std::vector<char> buffer(1 << 20);
  size_t got = 0;
  while ((got = file.read(buffer.data(), buffer.size())) > 0) EVP_DigestUpdate(context.get(), buffer.data(), got);
  return finish(context.get());
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

Provenance make_provenance(const std::string& tool, const std::string& command_line,
                           const std::vector<std::string>& inputs, const std::string& config) {
  Provenance provenance;
  provenance.tool = tool;
  provenance.version = kVersion;
  provenance.git_commit = kGitCommit;
  provenance.command_line = command_line;
  provenance.config = config;
  provenance.created = utc_now();
  // A folder is no file to hash: the files a tool reads in it are among its inputs themselves.
  for (const auto& path : inputs) {
    struct stat info {};
    if (path != "-" && ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) continue;
    provenance.inputs.push_back({path, sha256_file(path)});
  }
  return provenance;
}

void write_provenance(h5::Group& root, const Provenance& provenance) {
  root.set_attribute("tool", provenance.tool);
  root.set_attribute("version", provenance.version);
  root.set_attribute("git_commit", provenance.git_commit);
  put_text(root, "command_line", provenance.command_line);
  put_text(root, "config", provenance.config);
  root.set_attribute("created", provenance.created);
  if (!provenance.arithmetic.empty()) put_text(root, "arithmetic", provenance.arithmetic);
  std::vector<std::string> paths, hashes;
  for (const auto& input : provenance.inputs) {
    paths.push_back(input.path);
    hashes.push_back(input.sha256);
  }
  put_list(root, "input_files", paths);
  put_list(root, "input_sha256", hashes);
}

Provenance read_provenance(const h5::Group& root) {
  Provenance provenance;
  provenance.tool = optional_string(root, "tool");
  provenance.version = optional_string(root, "version");
  provenance.git_commit = optional_string(root, "git_commit");
  provenance.command_line = optional_string(root, "command_line");
  provenance.config = optional_string(root, "config");
  provenance.created = optional_string(root, "created");
  provenance.arithmetic = optional_string(root, "arithmetic");  // "" in files of older versions
  if (has_list(root, "input_files")) {
    const auto paths = get_list(root, "input_files");
    std::vector<std::string> hashes;
    if (has_list(root, "input_sha256")) hashes = get_list(root, "input_sha256");
    if (hashes.size() != paths.size())
      throw InputError(root.file() + ": input_files and input_sha256 differ in length");
    for (size_t i = 0; i < paths.size(); ++i) provenance.inputs.push_back({paths[i], hashes[i]});
  }
  return provenance;
}

}  // namespace sg
