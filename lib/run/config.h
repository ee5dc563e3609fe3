// config.h — model and training configuration, the named tiers of Table 3, and overrides.
//
// Every field has a name ("n_layer", "lr_peak", …) through which it can be set from a string,
// so the command line (--set n_layer=4), a --config file of "key = value" lines and the
// attributes of a checkpoint all use one vocabulary.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/io/loss_plan.h"
#include "lib/run/arm.h"
#include "lib/text/token_file.h"

namespace sg {

/// Bounds of the configuration fields (lib/SCHEMA.md, "Run file"), checked by validate() for a
/// command line and a run file alike: far above every tier (the largest, 350M: 24 layers, width
/// 1024, context 1024, 177,000 steps), low enough that no product of them overflows and that a
/// damaged run file cannot make a reader allocate or loop without end.
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxWidth = 65536;                 // n_embd
inline constexpr int64_t kMaxContext = int64_t{1} << 20;    // block_size
inline constexpr int64_t kMaxVocabulary = int64_t{1} << 24; // vocab_size
inline constexpr int64_t kMaxBatch = 65536;                 // micro_batch, accumulation
inline constexpr int64_t kMaxIterations = 10'000'000;
inline constexpr int64_t kMaxEvalBatches = 100'000;         // eval_batches, final_eval_batches

/// The GPT-2-style decoder (paper App. A) and its attention arm.
struct ModelConfig {
  int64_t n_layer = 6;
  int64_t n_head = 6;
  int64_t n_embd = 384;
  int64_t block_size = 512;  // context length in tokens (excluding a sink token)
  int64_t vocab_size = 50257;
  Arm arm;
  double gate_beta = 8.0;  // fixed sharpness of the norm gate (Eq. 3)

  int64_t head_dim() const { return n_embd / n_head; }
  /// The parameters of the model built from this configuration (lib/model/model.h), the tied
  /// embedding once: token and position embeddings, per layer two LayerNorms (weight and bias),
  /// the attention and MLP projections (12 C^2, no biases) and the arm's own (Table 4), the final
  /// LayerNorm, and the sink token's vector. Computed, not counted: no model is built.
  int64_t parameter_count() const;
  /// The parameters of that model by LibTorch name ("blocks.0.attn.c_attn.weight") and shape, in
  /// the order the model registers them (the tied output layer is wte.weight). Computed, not
  /// built: readers compare a run file's tensors with it before allocating any.
  std::vector<std::pair<std::string, std::vector<int64_t>>> parameter_shapes() const;
  /// Throws UsageError when the fields are inconsistent (e.g. width not divisible by heads) or
  /// outside their bounds (kMaxLayers, …; n_head at most n_embd).
  void validate() const;
};

/// The training precision (field precision): automatic until a run fixes it, then float32 or bf16.
enum class Precision { automatic, float32, bf16 };  // bf16 last: the table's static_assert counts to it

/// One precision: its name in run files and on the command line, another spelling read as it, and
/// what it means. A row per enumerator, in their order (precisions()).
struct PrecisionInfo {
  Precision value;
  const char* name;
  const char* alias;  // read as name ("" when none)
  bool autocast;      // products under bf16 autocast (fp32 master weights and AdamW moments, the
                      // matrix products in bf16 with float32 accumulation, gate maths, softmax
                      // statistics, layer norms and the loss's log-sum-exp in float32)
  const char* meaning;
};
const std::vector<PrecisionInfo>& precisions();

/// Reads a precision by name or alias; throws UsageError naming the field and the names.
Precision parse_precision(const std::string& text);
const char* to_string(Precision precision);
/// What automatic means on a device: bf16 autocast where the device multiplies in bf16 at speed (a
/// GPU; a CPU with AVX512-BF16 or AMX-BF16: `bf16_units`), float32 elsewhere; others are themselves.
Precision resolve_precision(Precision precision, bool bf16_units);
/// Whether a (resolved) precision runs the products under bf16 autocast.
bool uses_autocast(Precision precision);

/// The optimisation recipe of App. A and the per-tier schedule of Table 3.
struct TrainConfig {
  int64_t micro_batch = 64;   // sequences per forward pass
  int64_t accumulation = 1;   // micro-batches per optimizer step
  int64_t iterations = 6000;  // optimizer steps
  int64_t warmup = 200;       // linear warm-up steps
  double lr_peak = 6e-4;
  double lr_min = 6e-5;  // reached by the cosine at the final iteration
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;       // global gradient norm
  int64_t eval_interval = 250;  // steps between validation estimates
  int64_t eval_batches = 16;    // batches per validation estimate during training
  int64_t final_eval_batches = 64;
  int64_t eval_seed = 1234;  // seeds the fixed validation batches, the same for every run
  int64_t checkpoint_interval = 1000;
  /// The loss's plan (lib/io/loss_plan.h): auto until a run fixes it, then the plan it trains
  /// with (every path named, "ROWS:PRODUCTS:ROW_KERNEL"), which a resume keeps (lib/SCHEMA.md
  /// "loss_plan"). Named ones: chosen by the run, the left-out row kernel the best the CPU runs.
  LossPlan loss_plan;
  /// The training precision (field precision): automatic until a run fixes it (bf16 autocast on a
  /// GPU and on a CPU with bf16 matrix instructions, float32 on other CPUs), then float32 or bf16,
  /// which a resume keeps.
  Precision precision = Precision::automatic;
  /// Training's telemetry (lib/train/telemetry.h): the largest attention logit and residual
  /// activation (curves max_attention_logit, max_activation) measured every telemetry-th step;
  /// 0, the default, measures none and costs nothing. Run files without the field recorded every
  /// step: read as 1.
  int64_t telemetry = 0;

  int64_t batch() const { return micro_batch * accumulation; }
  /// Throws UsageError for a field out of range or outside its bound (kMaxBatch, kMaxIterations,
  /// kMaxEvalBatches), or inconsistent ones (warmup > iterations, lr_min > lr_peak).
  void validate() const;
};

/// Everything that defines one training run.
struct RunConfig {
  std::string tier = "10M";
  ModelConfig model;
  TrainConfig train;
  int64_t seed = 0;

  /// model.validate() and train.validate(): throws UsageError naming the field.
  void validate() const;
};

/// What a command line asks of a new run's configuration: --tier, --arm, --seed, --config, --set.
struct ConfigRequest {
  std::string tier = "small";
  std::string arm = "baseline";
  int64_t seed = 0;
  int64_t vocab_size = 0;               // > 0: the vocabulary before --config and --set (sg-train: the token file's)
  std::string config_file;              // --config: "" for none
  std::vector<std::string> overrides;   // --set key=value, applied after the file, in order
};

/// The one way a tool turns a command line into a configuration (sg-train, sg-arms, sg-info
/// --tier): the tier's preset with the arm and seed, vocab_size, then the --config file, then
/// the overrides, then RunConfig::validate(). Throws UsageError naming the field (an unknown
/// tier, arm or field, a value that does not parse or is out of bounds), InputError naming the
/// file and line for a bad --config line.
RunConfig configure_run(const ConfigRequest& request);

/// A named preset (Table 3, plus small CPU tiers).
struct Tier {
  std::string name;
  std::string description;
  ModelConfig model;
  TrainConfig train;
};

/// All presets: 10M, 50M, 124M, 350M (Table 3) and the CPU tiers tiny, quick, small, cpu.
const std::vector<Tier>& tiers();

/// The presets' names, in the order of tiers(): every --tier list and hint is this one.
std::vector<std::string> tier_names();

/// The preset of that name; throws UsageError listing the valid names.
const Tier& find_tier(const std::string& name);

/// A RunConfig initialised from a tier preset, with the given arm and seed.
RunConfig make_run_config(const std::string& tier, const std::string& arm, int64_t seed);

/// Sets one field by name from its string form ("n_layer", "4"); throws UsageError on an
/// unknown key or a value that does not parse.
void set_field(RunConfig& config, const std::string& key, const std::string& value);

/// Applies "key=value" strings in order. Throws UsageError on a bad assignment, and for
/// "tier=X" with X other than config.tier (a tier is chosen with make_run_config, i.e. --tier).
void apply_overrides(RunConfig& config, const std::vector<std::string>& assignments);

/// Reads a configuration file of "key = value" lines ('#' starts a comment) into config;
/// throws InputError naming the file and line (also for a `tier` other than config.tier).
void load_config_file(RunConfig& config, const std::string& path);

/// The vocab_size of a new run on a token file when the user sets none: the token file's
/// vocab_size as it is, not padded (the paper's tiers use GPT-2's 50,257; docs/decisions.md).
int64_t model_vocab_size(const TokenFileInfo& tokens);

/// Throws InputError naming the token file when its ids can reach past the model's vocabulary
/// (token vocab_size > model.vocab_size: the largest id, vocab_size − 1, has no row), with a hint;
/// `model_source` names the model in the message.
void check_vocabulary_fits(const TokenFile& tokens, const ModelConfig& model, const std::string& model_source);

/// Every field as (name, value string), in a fixed order; round-trips through set_field.
std::vector<std::pair<std::string, std::string>> to_fields(const RunConfig& config);

/// The names of all settable fields.
std::vector<std::string> field_names();

/// Whether a run file's /config may lack the field: loss_plan, precision and telemetry, which
/// files of earlier versions do not have. Every other field must be there.
bool field_optional(const std::string& name);

/// Whether the field telemetry's `interval` measures step `step` (1-based, as the curves count
/// steps): every interval-th step; none for interval 0.
inline bool telemetry_measures(int64_t interval, int64_t step) { return interval > 0 && step % interval == 0; }

/// What a run file that lacks an optional field means by it: the value those files' runs used
/// (loss_plan and precision "auto", telemetry "1").
std::string field_absent_value(const std::string& name);

}  // namespace sg
