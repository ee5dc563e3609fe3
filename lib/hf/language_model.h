// language_model.h — one interface over the two kinds of causal language model the instruments
// score and sample from: a sinkgate run file (any arm, lib/model/model.h) and a Hugging Face GPT-2
// or GPT-NeoX (Pythia) folder (lib/hf/pretrained.h), each with the tokenizer its ids belong to.
// A folder that sg-export wrote is the run it came from (hf_layout.h): an arm's model_type
// "sinkgate" is read as the sinkgate model of that arm, the baseline's plain GPT-2 as GPT-2; both
// carry the run's state (configuration, step) from config.json.
//
// Tokenizer: a folder's own (tokenizer.json, else vocab.json + merges.txt), which an explicit
// vocabulary overrides; for a run file the one it records (lib/text/tokenizer_record.h: embedded,
// or GPT-2's default_vocabulary_path()), and an explicit vocabulary must be that one (InputError
// naming both hashes otherwise); runs of older versions record none: the default GPT-2
// vocabulary, or the explicit one, unchecked.
// Every id the tokenizer can give must be inside the model's vocabulary (checked on load).
//
// Not here: what is scored (zero_shot.h), how tokens are chosen (generation.h).
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "lib/hf/pretrained.h"
#include "lib/model/checkpoint.h"
#include "lib/model/model.h"
#include "lib/text/tokenizer.h"

namespace sg {

/// True when `path` is a folder (a Hugging Face checkpoint), false for a file (a sinkgate run
/// file). Throws InputError when it does not exist.
bool is_pretrained_folder(const std::string& path);

/// A folder's base name (a file's without ".h5").
std::string default_model_name(const std::string& path);

/// The files that loading `path` with `tokenizer` ("" for the default) reads — a folder itself
/// (no output may replace any file in it), its config.json and safetensors files, or the run file,
/// then the vocabulary files — for provenance (which records the files, not the folder). Checks
/// config.json and the safetensors headers, or the run file's kind, so that a bad input fails
/// before any model runs. Throws InputError when a file is absent or malformed.
std::vector<std::string> model_input_files(const std::string& path, const std::string& tokenizer);

/// The state of incremental decoding: the key-value caches of whichever model is loaded.
struct DecodeCache {
  ModelCache run;
  PretrainedCache pretrained;
  int64_t tokens() const { return run.tokens + pretrained.tokens; }
};

class LanguageModel {
 public:
  /// Loads a run file or a checkpoint folder onto `device` with its tokenizer (`tokenizer` ""
  /// for the default, see the file comment). Throws InputError naming the file (unreadable
  /// model or vocabulary, a tokenizer whose ids do not fit the model). A checkpoint folder's weights
  /// are held as `residence` says (pretrained.h); a run file's in float32.
  static LanguageModel load(const std::string& path, const torch::Device& device, const std::string& tokenizer = "",
                            WeightResidence residence = WeightResidence::float32);

  /// A model built in memory (tests, tools that train and then score), named `name`, with its
  /// configuration and a tokenizer read from `vocabulary`.
  static LanguageModel wrap(GPT model, const RunConfig& config, const std::string& vocabulary, const std::string& name);

  /// True when the model is computed as a GPT-2 or GPT-NeoX checkpoint (pretrained.h), false for
  /// a sinkgate model (a run file, or an export of an arm other than the baseline).
  bool pretrained() const { return pretrained_ != nullptr; }
  /// True for a run file and an sg-export folder (of any arm): run_state() is then known.
  bool has_run() const { return run_state_ != nullptr; }
  /// The run's state (configuration, step; an export's without curves); only when has_run()
  /// (UsageError otherwise).
  const RunState& run_state() const;
  /// The sinkgate model, for what needs the training-side interface (validation_loss, hooks); only
  /// when !pretrained() (UsageError otherwise).
  GPTImpl& run_model() const;
  /// The GPT-2 or GPT-NeoX model; only when pretrained() (UsageError otherwise).
  const PretrainedModel& pretrained_model() const;
  /// The run file or folder as given.
  const std::string& path() const { return path_; }
  /// A folder's base name (an export's too), or a run file's tier/arm/seed.
  const std::string& name() const { return name_; }
  /// "sinkgate", "gpt2" or "gpt_neox".
  std::string family() const;
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  /// The vocabulary the tokenizer was read from.
  const std::string& vocabulary() const { return vocabulary_; }
  /// The longest sequence the model takes (a run's block_size, a folder's n_positions).
  int64_t context_length() const;
  int64_t vocab_size() const;
  torch::Device device() const { return device_; }

  /// idx (B, T) -> final hidden states (B, T, C), no gradient. T ≤ context_length().
  torch::Tensor hidden(const torch::Tensor& idx) const;
  /// The next positions idx (B, T) after those in `cache` -> their hidden states (B, T, C); the
  /// cache takes their keys and (gated) reads. UsageError past context_length().
  torch::Tensor hidden(const torch::Tensor& idx, DecodeCache& cache) const;
  /// Hidden states (..., C) -> logits (..., V), float32, no gradient.
  torch::Tensor head(const torch::Tensor& hidden) const;

 private:
  std::string path_, name_, vocabulary_;
  torch::Device device_ = torch::kCPU;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<GPTImpl> run_;
  std::shared_ptr<RunState> run_state_;
  std::shared_ptr<const PretrainedModel> pretrained_;
};

}  // namespace sg
