// export.cpp — a run file as a Hugging Face folder (see export.h).
#include "lib/hf/export.h"

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/paths.h"
#include "lib/hf/hf_layout.h"
#include "lib/io/safetensors.h"
#include "lib/model/checkpoint.h"
#include "lib/text/hf_vocabulary.h"
#include "lib/text/tokenizer.h"
#include "lib/text/tokenizer_record.h"
#include "sg/hf_code.h"

namespace sg {
namespace {

using ordered_json = nlohmann::ordered_json;
constexpr int64_t kGpt2VocabSize = 50257;
constexpr const char* kPaperTitle = "Abstention and Noise Filtering: Two Missing Primitives of Softmax Attention";

bool is_folder(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool exists(const std::string& path) {
  struct stat info {};
  return lstat(path.c_str(), &info) == 0;
}

bool folder_is_empty(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (!dir) return false;
  bool empty = true;
  while (const dirent* entry = readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(dir);
  return empty;
}

/// Removes a folder and everything in it (nftw: see tests/support.h on std::filesystem).
void remove_tree(const std::string& path) {
  nftw(path.c_str(), [](const char* name, const struct stat*, int, struct FTW*) { return std::remove(name); }, 16,
       FTW_DEPTH | FTW_PHYS);
}

std::string strip_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  if (!out) throw OutputError(path + ": cannot be written: " + std::strerror(errno), "is the disk full?");
}

/// Removes the temporary folder unless released (an export that failed leaves nothing behind).
struct TemporaryFolder {
  std::string path;
  bool keep = false;
  ~TemporaryFolder() {
    if (!keep && !path.empty()) remove_tree(path);
  }
};

/// Writes model.safetensors tensor by tensor; returns the number of parameters written.
int64_t write_weights(const std::string& path, GPTImpl& model, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  const auto tensors = hf_tensors(model.config());
  std::map<std::string, torch::Tensor> by_name;
  for (const auto& item : model.named_parameters()) by_name[item.key()] = item.value();
  if (by_name.size() != static_cast<size_t>(std::count_if(tensors.begin(), tensors.end(), [](const HfTensor& t) {
        return !t.parameter.empty();
      })))
    throw std::logic_error("sg-export: the model's parameters are not those of its configuration");
  std::vector<SafetensorsEntry> entries;
  int64_t parameters = 0;
  for (const auto& tensor : tensors) {
    SafetensorsEntry entry;
    entry.name = tensor.name;
    entry.dtype = dtype == torch::kBFloat16 ? SafetensorsDtype::BF16 : SafetensorsDtype::F32;
    entry.shape = tensor.shape;
    parameters += entry.numel();
    entries.push_back(entry);
  }
  SafetensorsWriter writer(path, entries, {{"format", "pt"}});
  for (const auto& tensor : tensors) {
    // float32 values made one tensor at a time, so that the model is never held twice.
    torch::Tensor values = torch::zeros(tensor.shape);  // a zero bias
    if (!tensor.parameter.empty()) {
      values = by_name.at(tensor.parameter).detach().to(torch::kCPU, torch::kFloat);
      if (tensor.transposed) values = values.t();
    }
    const auto data = values.to(dtype).contiguous();
    writer.write(tensor.name, data.data_ptr(), static_cast<uint64_t>(data.numel() * data.element_size()));
  }
  writer.finish();
  return parameters;
}

ordered_json nan_as_null(double value) { return std::isfinite(value) ? ordered_json(value) : ordered_json(nullptr); }

ordered_json hf_config(const RunState& state, const std::string& dtype, int64_t eot, const ExportOptions& options,
                       const std::string& run_path, const std::string& run_sha256) {
  const auto& model = state.config.model;
  const bool baseline = model.arm == Arm{};
  ordered_json config = ordered_json::object();
  config["architectures"] = ordered_json::array({baseline ? "GPT2LMHeadModel" : "SinkgateForCausalLM"});
  if (!baseline) {
    config["auto_map"] = {{"AutoConfig", "configuration_sinkgate.SinkgateConfig"},
                          {"AutoModel", "modeling_sinkgate.SinkgateModel"},
                          {"AutoModelForCausalLM", "modeling_sinkgate.SinkgateForCausalLM"}};
  }
  config["model_type"] = baseline ? "gpt2" : "sinkgate";
  if (!baseline) config.update(hf_arm_fields(model));
  config["vocab_size"] = model.vocab_size;
  config["n_positions"] = model.block_size;
  config["n_embd"] = model.n_embd;
  config["n_layer"] = model.n_layer;
  config["n_head"] = model.n_head;
  config["n_inner"] = 4 * model.n_embd;
  config["activation_function"] = "gelu";  // exact (erf) GELU, as sinkgate's F::gelu
  config["layer_norm_epsilon"] = 1e-5;
  config["resid_pdrop"] = 0.0;
  config["embd_pdrop"] = 0.0;
  config["attn_pdrop"] = 0.0;
  config["initializer_range"] = 0.02;
  config["scale_attn_weights"] = true;
  config["scale_attn_by_inverse_layer_idx"] = false;
  config["reorder_and_upcast_attn"] = false;
  config["add_cross_attention"] = false;
  config["tie_word_embeddings"] = true;
  config["use_cache"] = true;
  config["bos_token_id"] = eot;
  config["eos_token_id"] = eot;
  config["dtype"] = dtype;
  config["sinkgate"] = {{"tier", state.config.tier},
                        {"arm", model.arm.name()},
                        {"seed", state.config.seed},
                        {"step", state.step},
                        {"iterations", state.config.train.iterations},
                        {"finished", state.finished},
                        {"tokens_seen", state.tokens_seen},
                        {"final_val_loss", nan_as_null(state.final_val_loss)},
                        {"final_eval_batches", state.config.train.final_eval_batches},
                        {"run_file", run_path},
                        {"run_sha256", run_sha256},
                        {"version", options.provenance.version},
                        {"git_commit", options.provenance.git_commit},
                        {"command_line", options.provenance.command_line}};
  // The whole configuration, so that sg-eval scores the export on the run's own validation batches.
  ordered_json fields = ordered_json::object();
  for (const auto& [name, value] : to_fields(state.config)) fields[name] = value;
  config["sinkgate"]["config"] = std::move(fields);
  return config;
}

std::string model_card(const RunState& state, const std::string& folder, const std::string& dtype, int64_t parameters,
                       const ExportOptions& options, const std::string& run_path, const std::string& run_sha256) {
  const auto& model = state.config.model;
  const bool baseline = model.arm == Arm{};
  const std::string name = std::string("sinkgate ") + state.config.tier + " " + model.arm.name() + " seed " +
                           std::to_string(state.config.seed);
  const std::string remote = baseline ? "" : ", trust_remote_code=True";
  std::ostringstream card;
  card << "---\nlibrary_name: transformers\npipeline_tag: text-generation\ntags:\n- sinkgate\n- gpt2\n- "
       << model.arm.name() << "\n---\n\n";
  card << "# " << name << "\n\n";
  card << "A GPT-2-style language model trained by sinkgate for the paper *" << kPaperTitle
       << "*, exported by `sg-export`. " << (baseline ? "The baseline arm is a plain GPT-2: transformers loads it as "
                                                        "`GPT2LMHeadModel`."
                                                      : "Its attention arm is not GPT-2's: the folder carries its code "
                                                        "(`modeling_sinkgate.py`, `configuration_sinkgate.py`), which "
                                                        "transformers runs with `trust_remote_code=True`.")
       << "\n\n";
  char loss[64], beta[32];
  std::snprintf(loss, sizeof loss, "%.6f", state.final_val_loss);
  std::snprintf(beta, sizeof beta, "%g", model.gate_beta);
  card << "| | |\n| --- | --- |\n";
  card << "| arm | `" << model.arm.name() << "` (zero option `" << to_string(model.arm.zero) << "`, filter `"
       << to_string(model.arm.filter) << "`" << (model.arm.filter == Filter::normgate || model.arm.filter == Filter::renorm ? std::string(", β ") + beta
                                                                                       : std::string())
       << (model.arm.has_output_gate() ? ", output gate `" + to_string(model.arm.output_gate) + "`" : std::string())
       << ") |\n";
  card << "| tier | `" << state.config.tier << "`: " << model.n_layer << " layers, " << model.n_head << " heads, width "
       << model.n_embd << ", context " << model.block_size << ", vocabulary " << model.vocab_size << " |\n";
  card << "| parameters | " << parameters << " (the head tied to the token embedding) |\n";
  card << "| seed | " << state.config.seed << " |\n";
  card << "| training | step " << state.step << " of " << state.config.train.iterations
       << (state.finished ? " (finished)" : " (**unfinished**: exported as it stood)") << " |\n";
  card << "| tokens seen | " << state.tokens_seen << " |\n";
  card << "| final validation loss | "
       << (std::isfinite(state.final_val_loss)
               ? std::string(loss) + " nats on " + std::to_string(state.config.train.final_eval_batches) +
                     " fixed validation batches (eval_seed " + std::to_string(state.config.train.eval_seed) + ")"
               : std::string("none (the run is unfinished)"))
       << " |\n";
  card << "| weights | " << dtype << " |\n";
  card << "| run file | `" << run_path << "` (SHA-256 `" << run_sha256 << "`) |\n";
  card << "| exported by | sinkgate " << options.provenance.version << " (commit `" << options.provenance.git_commit
       << "`): `" << options.provenance.command_line << "` |\n\n";
  card << "## How to load\n\n```python\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
       << "tokenizer = AutoTokenizer.from_pretrained(\"" << folder << "\")\n"
       << "model = AutoModelForCausalLM.from_pretrained(\"" << folder << "\"" << remote << ")\n"
       << "ids = tokenizer(\"The meaning of life is\", return_tensors=\"pt\").input_ids\n"
       << "print(tokenizer.decode(model.generate(ids, max_new_tokens=20, do_sample=False)[0]))\n```\n\n";
  card << "With lm-evaluation-harness:\n\n```sh\nlm_eval --model hf --model_args pretrained=" << folder
       << (baseline ? "" : ",trust_remote_code=True") << " --tasks lambada_openai,hellaswag,wikitext\n```\n\n";
  if (!baseline)
    card << "The attention follows sinkgate's rules exactly (docs/arms.md in sinkgate); `output_attentions` gives the "
            "weights on the real keys"
         << (model.arm.zero == ZeroOption::none ? std::string(", whose rows sum to one")
                                                : std::string(", whose rows sum to one minus the ") +
                                                      (model.arm.zero == ZeroOption::sinktoken ? "sink token's" : "phantom's") +
                                                      " mass")
         << (model.arm.gates_values() ? " (before the gate multiplies the reads)" : "")
         << (model.arm.has_output_gate() ? " (before the output gate)" : "") << ".\n\n";
  card << "## Citation\n\n```bibtex\n@misc{sinkgate_abstention_filtering,\n  title = {" << kPaperTitle
       << "},\n  note  = {Models trained and exported with sinkgate " << options.provenance.version << "}\n}\n```\n";
  return card.str();
}

}  // namespace

void check_export_folder(const std::string& folder_in, bool force) {
  const auto folder = strip_trailing_slashes(folder_in);
  if (folder.empty() || folder == "-") throw UsageError("-o: an export is a folder; give its path");
  if (exists(folder)) {
    if (!is_folder(folder))
      throw OutputError(folder + ": exists and is not a folder", "give a new folder's path to -o");
    if (!folder_is_empty(folder) && !force)
      throw OutputError(folder + ": exists and is not empty", "use --force to replace it, or give another folder");
  }
  const auto parent = directory_of(folder);
  if (!is_folder(parent)) throw OutputError(parent + ": no such folder (the export's parent)", "create it first");
  if (access(parent.c_str(), W_OK | X_OK) != 0)
    throw OutputError(parent + ": cannot be written: " + std::strerror(errno) + " (the export's parent)",
                      "export into a folder you can write");
}

Tokenizer export_vocabulary(const RunState& state, const std::string& run_path, const std::string& vocabulary) {
  const auto& model = state.config.model;
  if (!state.tokenizer.known() && vocabulary.empty() && model.vocab_size != kGpt2VocabSize)
    throw InputError(run_path + ": the run was trained on a vocabulary of " + std::to_string(model.vocab_size) +
                         " ids, not GPT-2's 50257, and its file (from an older sinkgate) does not record which",
                     "give that vocabulary's file: sg-export --vocab FILE");
  auto tokenizer = tokenizer_for(state.tokenizer, run_path, vocabulary);
  if (tokenizer.vocab_size() > model.vocab_size)
    throw InputError(tokenizer.path() + ": has " + std::to_string(tokenizer.vocab_size()) + " ids, more than the " +
                         std::to_string(model.vocab_size) + " of the model of " + run_path,
                     "give the vocabulary the run was trained on (--vocab)");
  return tokenizer;
}

ExportSummary export_run(const std::string& run_path, const std::string& folder_in, const ExportOptions& options) {
  const auto folder = strip_trailing_slashes(folder_in);
  if (options.dtype != "float32" && options.dtype != "bfloat16")
    throw UsageError("--dtype must be float32 or bfloat16, not '" + options.dtype + "'");
  check_export_folder(folder, options.force);
  const auto state = read_run_state(run_path);
  const auto tokenizer = export_vocabulary(state, run_path, options.vocabulary);
  const auto vocabulary = hf_vocabulary_files(tokenizer, state.config.model.block_size);
  if (!state.finished)
    log::warn(run_path + " is unfinished (step " + std::to_string(state.step) + " of " +
              std::to_string(state.config.train.iterations) + "): exported as it stands");
  const auto run_sha256 = sha256_file(run_path);

  TemporaryFolder temporary;
  temporary.path = folder + ".tmp." + std::to_string(getpid());
  remove_tree(temporary.path);
  if (mkdir(temporary.path.c_str(), 0777) != 0)
    throw OutputError(temporary.path + ": cannot be created: " + std::strerror(errno));
  const auto in_folder = [&](const std::string& name) { return temporary.path + "/" + name; };

  ExportSummary summary;
  summary.folder = folder;
  summary.model_type = state.config.model.arm == Arm{} ? "gpt2" : "sinkgate";
  const auto dtype = options.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
  {
    auto model = load_model(run_path, state.config, torch::kCPU);
    summary.parameters = write_weights(in_folder("model.safetensors"), *model, dtype);
  }
  struct stat info {};
  if (stat(in_folder("model.safetensors").c_str(), &info) == 0) summary.bytes = info.st_size;
  const int64_t eot = tokenizer.eot_id();
  write_file(in_folder("config.json"), hf_config(state, options.dtype, eot, options, run_path, run_sha256).dump(2) + "\n");
  ordered_json generation = {{"bos_token_id", eot}, {"eos_token_id", eot}};
  write_file(in_folder("generation_config.json"), generation.dump(2) + "\n");
  summary.files = {"config.json", "generation_config.json", "model.safetensors"};
  for (const auto& file : vocabulary) {
    write_file(in_folder(file.name), file.bytes);
    summary.files.push_back(file.name);
  }
  write_file(in_folder("README.md"), model_card(state, folder, options.dtype, summary.parameters, options, run_path, run_sha256));
  summary.files.push_back("README.md");
  if (summary.model_type == "sinkgate") {
    write_file(in_folder("configuration_sinkgate.py"), kHfConfigurationSource);
    write_file(in_folder("modeling_sinkgate.py"), kHfModelingSource);
    summary.files.push_back("configuration_sinkgate.py");
    summary.files.push_back("modeling_sinkgate.py");
  }

  // Into place: an empty folder is replaced by rename(2) itself; a non-empty one (--force) is moved
  // aside first and removed once the new folder is in place.
  std::string old;
  if (exists(folder) && !folder_is_empty(folder)) {
    if (!options.force) throw OutputError(folder + ": appeared meanwhile and is not empty", "use --force to replace it");
    old = folder + ".old.tmp." + std::to_string(getpid());
    remove_tree(old);
    if (rename(folder.c_str(), old.c_str()) != 0)
      throw OutputError(folder + ": cannot be moved aside: " + std::strerror(errno));
  }
  if (rename(temporary.path.c_str(), folder.c_str()) != 0) {
    const std::string problem = std::strerror(errno);
    if (!old.empty()) rename(old.c_str(), folder.c_str());
    throw OutputError(folder + ": cannot be put in place: " + problem);
  }
  temporary.keep = true;
  if (!old.empty()) remove_tree(old);
  return summary;
}

}  // namespace sg
