// language_model.cpp — see language_model.h.
#include "lib/hf/language_model.h"

#include <sys/stat.h>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/hf/hf_layout.h"
#include "lib/io/safetensors.h"
#include "lib/text/tokenizer_record.h"

namespace sg {
namespace {

bool is_file(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

}  // namespace

bool is_pretrained_folder(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0)
    throw InputError(path + ": no such file or folder",
                     "give a Hugging Face checkpoint folder (config.json + model.safetensors) or an sg-train run file");
  return S_ISDIR(info.st_mode);
}

std::string default_model_name(const std::string& path) {
  std::string name = path;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  const auto slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0) name.resize(name.size() - 3);
  return name;
}

std::vector<std::string> model_input_files(const std::string& path, const std::string& tokenizer) {
  std::vector<std::string> files;
  const bool folder = is_pretrained_folder(path);
  bool embedded = false;
  if (folder) {
    if (!read_exported_run(path + "/config.json")) read_pretrained_config(path + "/config.json");
    files.push_back(path);  // the folder: no output may replace any file in it (h5::check_writable)
    files.push_back(path + "/config.json");
    for (const auto& p : SafetensorsFolder::open(path).paths()) files.push_back(p);
  } else {
    embedded = !read_run_state(path).tokenizer.files.empty();  // also checks the file kind and version
    files.push_back(path);
  }
  // The vocabulary files that loading will read (a vocab.json's merges.txt beside it too; none
  // beside a run file that embeds its own).
  const std::string vocabulary = !tokenizer.empty() ? tokenizer
                                 : folder           ? path
                                 : embedded         ? std::string()
                                                    : default_vocabulary_path();
  if (!vocabulary.empty())
    for (const auto& file : vocabulary_files(vocabulary))
      if (is_file(file)) files.push_back(file);
  return files;
}

LanguageModel LanguageModel::load(const std::string& path, const torch::Device& device, const std::string& tokenizer,
                                  WeightResidence residence) {
  LanguageModel model;
  model.path_ = path;
  model.device_ = device;
  const bool folder = is_pretrained_folder(path);
  if (folder) {
    model.vocabulary_ = !tokenizer.empty() ? tokenizer : path;
    model.tokenizer_ = std::make_shared<const Tokenizer>(Tokenizer::load(model.vocabulary_));
    // An sg-export folder is the run it came from: a sinkgate model of its arm (the baseline's is
    // a plain GPT-2, read as one), with the run's configuration for its validation batches.
    if (auto exported = read_exported_run(path + "/config.json")) {
      model.run_state_ = std::make_shared<RunState>(std::move(exported->state));
      if (exported->sinkgate) model.run_ = load_exported_model(path, model.run_state_->config.model, device).ptr();
    }
    if (!model.run_) model.pretrained_ = std::make_shared<const PretrainedModel>(PretrainedModel::load(path, device, residence));
    model.name_ = default_model_name(path);
  } else {
    model.run_state_ = std::make_shared<RunState>(read_run_state(path));
    // The run's own vocabulary (embedded, or GPT-2's); a --vocab must be that one.
    model.tokenizer_ = std::make_shared<const Tokenizer>(tokenizer_for(model.run_state_->tokenizer, path, tokenizer));
    model.vocabulary_ = model.tokenizer_->path();
    model.run_ = load_model(path, model.run_state_->config, device).ptr();
    model.run_->eval();
    const auto& c = model.run_state_->config;
    model.name_ = c.tier + "/" + c.model.arm.name() + "/" + std::to_string(c.seed);
  }
  if (model.tokenizer_->vocab_size() > model.vocab_size())
    throw InputError(model.vocabulary_ + ": has " + std::to_string(model.tokenizer_->vocab_size()) +
                         " token ids, more than the vocabulary of " + std::to_string(model.vocab_size()) + " of " + path,
                     folder ? "use the checkpoint's own tokenizer (leave out --vocab)"
                            : "give the vocabulary the run was trained with (--vocab)");
  return model;
}

LanguageModel LanguageModel::wrap(GPT model, const RunConfig& config, const std::string& vocabulary, const std::string& name) {
  LanguageModel wrapped;
  wrapped.path_ = name;
  wrapped.name_ = name;
  wrapped.vocabulary_ = vocabulary;
  wrapped.tokenizer_ = std::make_shared<const Tokenizer>(Tokenizer::load(vocabulary));
  wrapped.run_state_ = std::make_shared<RunState>();
  wrapped.run_state_->config = config;
  wrapped.device_ = model->wte->weight.device();
  wrapped.run_ = model.ptr();
  wrapped.run_->eval();
  if (wrapped.tokenizer_->vocab_size() > wrapped.vocab_size())
    throw InputError(vocabulary + ": has more token ids than the vocabulary of " + std::to_string(wrapped.vocab_size()) +
                     " of " + name);
  return wrapped;
}

const RunState& LanguageModel::run_state() const {
  if (!run_state_) throw UsageError(path_ + " is a pretrained checkpoint, not a sinkgate run or its export");
  return *run_state_;
}

GPTImpl& LanguageModel::run_model() const {
  if (!run_) throw UsageError(path_ + " is a " + family() + " checkpoint, not a sinkgate model");
  return *run_;
}

const PretrainedModel& LanguageModel::pretrained_model() const {
  if (!pretrained_) throw UsageError(path_ + " is a sinkgate model, not a GPT-2 or GPT-NeoX checkpoint");
  return *pretrained_;
}

std::string LanguageModel::family() const { return pretrained_ ? pretrained_->config().model_type() : "sinkgate"; }

int64_t LanguageModel::context_length() const {
  return pretrained_ ? pretrained_->config().n_positions : run_->config().block_size;
}

int64_t LanguageModel::vocab_size() const {
  return pretrained_ ? pretrained_->config().vocab_size : run_->config().vocab_size;
}

torch::Tensor LanguageModel::hidden(const torch::Tensor& idx) const {
  torch::NoGradGuard no_grad;
  if (pretrained_) return pretrained_->hidden(idx);
  if (idx.size(1) > context_length())
    throw UsageError("sequence of " + std::to_string(idx.size(1)) + " tokens exceeds the context length " +
                     std::to_string(context_length()) + " of " + path_);
  return run_->hidden(idx.to(device_, torch::kLong));
}

torch::Tensor LanguageModel::hidden(const torch::Tensor& idx, DecodeCache& cache) const {
  torch::NoGradGuard no_grad;
  if (pretrained_) return pretrained_->hidden(idx, cache.pretrained);
  if (cache.run.tokens + idx.size(1) > context_length())
    throw UsageError("sequence of " + std::to_string(cache.run.tokens + idx.size(1)) +
                     " tokens exceeds the context length " + std::to_string(context_length()) + " of " + path_);
  return run_->hidden(idx.to(device_, torch::kLong), &cache.run);
}

torch::Tensor LanguageModel::head(const torch::Tensor& hidden) const {
  torch::NoGradGuard no_grad;
  if (pretrained_) return pretrained_->head(hidden);
  return torch::nn::functional::linear(hidden, run_->wte->weight).to(torch::kFloat32);
}

}  // namespace sg
