// config.cpp — tiers, field table and parsing of the run configuration.
#include "lib/run/config.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <iterator>
#include <stdexcept>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/base/text.h"

namespace sg {
namespace {

Tier make_tier(std::string name, std::string description, int64_t layers, int64_t heads,
               int64_t width, int64_t context, int64_t micro_batch, int64_t accumulation,
               int64_t iterations, int64_t warmup) {
  Tier tier;
  tier.name = std::move(name);
  tier.description = std::move(description);
  tier.model.n_layer = layers;
  tier.model.n_head = heads;
  tier.model.n_embd = width;
  tier.model.block_size = context;
  tier.train.micro_batch = micro_batch;
  tier.train.accumulation = accumulation;
  tier.train.iterations = iterations;
  tier.train.warmup = warmup;
  return tier;
}

std::vector<Tier> build_tiers() {
  std::vector<Tier> out;
  // Table 3 of the paper.
  out.push_back(make_tier("10M", "paper tier (Table 3), 0.20B tokens", 6, 6, 384, 512, 64, 1, 6000, 200));
  out.push_back(make_tier("50M", "paper tier (Table 3), 0.95B tokens", 10, 10, 640, 1024, 16, 2, 29000, 500));
  out.push_back(make_tier("124M", "paper tier (Table 3), 1.60B tokens", 12, 12, 768, 1024, 8, 4, 48800, 800));
  out.push_back(make_tier("350M", "paper tier (Table 3), 5.80B tokens", 24, 16, 1024, 1024, 8, 4, 177000, 2000));
  // App. B's preliminary TinyStories tier: the paper gives only its data (269M training, 4.8M
  // validation tokens); architecture and schedule are the 10M tier's (docs/decisions.md).
  out.push_back(make_tier("tinystories", "the paper's preliminary TinyStories tier (App. B, Table 5): the 10M tier's model and schedule", 6, 6, 384, 512, 64, 1, 6000, 200));
  // CPU tiers for tests and quick runs.
  Tier tiny = make_tier("tiny", "CPU tier for tests: seconds", 2, 2, 64, 64, 8, 1, 200, 20);
  tiny.train.eval_interval = 50;
  tiny.train.eval_batches = 4;
  tiny.train.final_eval_batches = 8;
  tiny.train.checkpoint_interval = 100;
  out.push_back(tiny);
  Tier quick = make_tier("quick", "CPU tier of the quick profile (Makefile.experiments): minutes", 2, 4, 64, 64, 8, 1,
                         400, 40);
  quick.train.eval_interval = 100;
  quick.train.eval_batches = 4;
  quick.train.final_eval_batches = 16;
  quick.train.checkpoint_interval = 200;
  out.push_back(quick);
  Tier small = make_tier("small", "CPU tier for quick runs: a few minutes", 3, 4, 128, 128, 16, 1, 600, 50);
  small.train.eval_interval = 100;
  small.train.eval_batches = 8;
  small.train.final_eval_batches = 16;
  small.train.checkpoint_interval = 200;
  out.push_back(small);
  Tier cpu = make_tier("cpu", "CPU tier of the throughput benchmark", 4, 4, 256, 256, 8, 1, 1000, 100);
  cpu.train.eval_interval = 200;
  cpu.train.eval_batches = 8;
  cpu.train.final_eval_batches = 16;
  cpu.train.checkpoint_interval = 250;
  out.push_back(cpu);
  return out;
}

struct Field {
  const char* name;
  std::function<std::string(const RunConfig&)> get;
  std::function<void(RunConfig&, const std::string&)> set;
  bool optional = false;  // a run file may lack it (lib/SCHEMA.md, "Run file")
  const char* absent = "";  // what such a file means by it
};

int64_t parse_int(const std::string& key, const std::string& text) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw UsageError("field '" + key + "' needs an integer, got '" + text + "'");
  return value;
}

double parse_double(const std::string& key, const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value))
    throw UsageError("field '" + key + "' needs a finite number, got '" + text + "'");
  return value;
}

std::string format_double(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

#define SG_INT_FIELD(NAME, MEMBER)                                                        \
  Field {                                                                                 \
    NAME, [](const RunConfig& c) { return std::to_string(c.MEMBER); },                    \
        [](RunConfig& c, const std::string& v) { c.MEMBER = parse_int(NAME, v); }         \
  }
#define SG_DOUBLE_FIELD(NAME, MEMBER)                                                     \
  Field {                                                                                 \
    NAME, [](const RunConfig& c) { return format_double(c.MEMBER); },                     \
        [](RunConfig& c, const std::string& v) { c.MEMBER = parse_double(NAME, v); }      \
  }

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      Field{"tier", [](const RunConfig& c) { return c.tier; },
            [](RunConfig& c, const std::string& v) { c.tier = v; }},
      Field{"arm", [](const RunConfig& c) { return c.model.arm.name(); },
            [](RunConfig& c, const std::string& v) { c.model.arm = parse_arm(v); }},
      SG_INT_FIELD("seed", seed),
      SG_INT_FIELD("n_layer", model.n_layer),
      SG_INT_FIELD("n_head", model.n_head),
      SG_INT_FIELD("n_embd", model.n_embd),
      SG_INT_FIELD("block_size", model.block_size),
      SG_INT_FIELD("vocab_size", model.vocab_size),
      SG_DOUBLE_FIELD("gate_beta", model.gate_beta),
      SG_INT_FIELD("micro_batch", train.micro_batch),
      SG_INT_FIELD("accumulation", train.accumulation),
      SG_INT_FIELD("iterations", train.iterations),
      SG_INT_FIELD("warmup", train.warmup),
      SG_DOUBLE_FIELD("lr_peak", train.lr_peak),
      SG_DOUBLE_FIELD("lr_min", train.lr_min),
      SG_DOUBLE_FIELD("weight_decay", train.weight_decay),
      SG_DOUBLE_FIELD("beta1", train.beta1),
      SG_DOUBLE_FIELD("beta2", train.beta2),
      SG_DOUBLE_FIELD("grad_clip", train.grad_clip),
      SG_INT_FIELD("eval_interval", train.eval_interval),
      SG_INT_FIELD("eval_batches", train.eval_batches),
      SG_INT_FIELD("final_eval_batches", train.final_eval_batches),
      SG_INT_FIELD("eval_seed", train.eval_seed),
      SG_INT_FIELD("checkpoint_interval", train.checkpoint_interval),
      // Run files written before the plan was recorded lack it: read as auto.
      Field{"loss_plan", [](const RunConfig& c) { return loss_plan_text(c.train.loss_plan); },
            [](RunConfig& c, const std::string& v) { c.train.loss_plan = parse_loss_plan(v); },
            /*optional=*/true, /*absent=*/"auto"},
      // Likewise: read as auto, the device's precision, which is what those runs trained in.
      Field{"precision", [](const RunConfig& c) { return std::string(to_string(c.train.precision)); },
            [](RunConfig& c, const std::string& v) { c.train.precision = parse_precision(v); },
            /*optional=*/true, /*absent=*/"auto"},
      // Runs of earlier versions measured their maxima every step.
      Field{"telemetry", [](const RunConfig& c) { return std::to_string(c.train.telemetry); },
            [](RunConfig& c, const std::string& v) { c.train.telemetry = parse_int("telemetry", v); },
            /*optional=*/true, /*absent=*/"1"},
  };
  return table;
}

#undef SG_INT_FIELD
#undef SG_DOUBLE_FIELD

}  // namespace

int64_t ModelConfig::parameter_count() const {
  const int64_t c = n_embd;
  // arm_parameter_cost counts the sink token's vector with the layer's cost; it is one per model.
  int64_t once = 0;
  for (const auto& parameter : arm_parameters(arm))
    if (!parameter.per_layer) {
      int64_t size = 1;
      for (const int64_t extent : parameter.shape_of(n_head, head_dim(), c)) size *= extent;
      once += size;
    }
  const int64_t arm_per_layer = arm_parameter_cost(arm, n_head, head_dim(), c) - once;
  const int64_t layer = 2 * (2 * c) + 12 * c * c + arm_per_layer;
  return vocab_size * c + block_size * c + n_layer * layer + 2 * c + once;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> ModelConfig::parameter_shapes() const {
  // LibTorch lists a module's own parameters before its children's, children in registration
  // order (lib/model/model.cpp, attention.cpp); the arm's come from its table (lib/run/arm.h).
  const int64_t c = n_embd, h = n_head;
  const auto arm_own = arm_parameters(arm);
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for (const auto& parameter : arm_own)
    if (!parameter.per_layer) out.push_back({parameter.stored_name(0), parameter.shape_of(h, head_dim(), c)});
  out.push_back({"wte.weight", {vocab_size, c}});
  out.push_back({"wpe.weight", {block_size, c}});
  for (int64_t layer = 0; layer < n_layer; ++layer) {
    const std::string block = "blocks." + std::to_string(layer) + ".";
    out.push_back({block + "ln_1.weight", {c}});
    out.push_back({block + "ln_1.bias", {c}});
    for (const auto& parameter : arm_own)
      if (parameter.per_layer) out.push_back({parameter.stored_name(layer), parameter.shape_of(h, head_dim(), c)});
    out.push_back({block + "attn.c_attn.weight", {3 * c, c}});
    out.push_back({block + "attn.c_proj.weight", {c, c}});
    out.push_back({block + "ln_2.weight", {c}});
    out.push_back({block + "ln_2.bias", {c}});
    out.push_back({block + "mlp.c_fc.weight", {4 * c, c}});
    out.push_back({block + "mlp.c_proj.weight", {c, 4 * c}});
  }
  out.push_back({"ln_f.weight", {c}});
  out.push_back({"ln_f.bias", {c}});
  return out;
}

namespace {

const char* const kBoundsHint = "lib/SCHEMA.md lists the bounds of every configuration field";

/// Throws UsageError naming the field unless 0 < value <= most.
void check_within(const char* name, int64_t value, int64_t most) {
  if (value <= 0) throw UsageError(std::string(name) + " must be positive, got " + std::to_string(value));
  if (value > most)
    throw UsageError(std::string(name) + " = " + std::to_string(value) + " exceeds sinkgate's bound of " +
                         std::to_string(most), kBoundsHint);
}

/// Throws UsageError naming the field unless value > 0.
void check_positive(const char* name, int64_t value) {
  if (value <= 0) throw UsageError(std::string(name) + " must be positive, got " + std::to_string(value));
}

void check_positive(const char* name, double value) {
  if (!(value > 0)) throw UsageError(std::string(name) + " must be positive, got " + format_double(value));
}

/// Throws UsageError naming the field unless 0 <= value < 1.
void check_fraction(const char* name, double value) {
  if (!(value >= 0 && value < 1))
    throw UsageError(std::string(name) + " must lie in [0, 1), got " + format_double(value));
}

}  // namespace

void ModelConfig::validate() const {
  check_within("n_layer", n_layer, kMaxLayers);
  check_within("n_embd", n_embd, kMaxWidth);
  check_within("n_head", n_head, kMaxWidth);
  if (n_head > n_embd)
    throw UsageError("n_head (" + std::to_string(n_head) + ") exceeds n_embd (" + std::to_string(n_embd) +
                     "): every head needs at least one channel of the width");
  if (n_embd % n_head != 0)
    throw UsageError("n_embd (" + std::to_string(n_embd) + ") is not divisible by n_head (" +
                     std::to_string(n_head) + ")");
  check_within("block_size", block_size, kMaxContext);
  check_within("vocab_size", vocab_size, kMaxVocabulary);
  check_positive("gate_beta", gate_beta);
}

void TrainConfig::validate() const {
  check_within("micro_batch", micro_batch, kMaxBatch);
  check_within("accumulation", accumulation, kMaxBatch);
  check_within("iterations", iterations, kMaxIterations);
  if (warmup < 0 || warmup > iterations)
    throw UsageError("warmup (" + std::to_string(warmup) + ") must lie in [0, iterations (" + std::to_string(iterations) + ")]");
  check_positive("lr_peak", lr_peak);
  if (!(lr_min >= 0 && lr_min <= lr_peak))
    throw UsageError("lr_min (" + format_double(lr_min) + ") must lie in [0, lr_peak (" + format_double(lr_peak) + ")]");
  if (!(weight_decay >= 0)) throw UsageError("weight_decay must be non-negative, got " + format_double(weight_decay));
  check_fraction("beta1", beta1);
  check_fraction("beta2", beta2);
  check_positive("grad_clip", grad_clip);
  check_positive("eval_interval", eval_interval);
  check_within("eval_batches", eval_batches, kMaxEvalBatches);
  check_within("final_eval_batches", final_eval_batches, kMaxEvalBatches);
  check_positive("checkpoint_interval", checkpoint_interval);
  if (telemetry < 0 || telemetry > kMaxIterations)
    throw UsageError("telemetry must lie in [0, " + std::to_string(kMaxIterations) + "], got " + std::to_string(telemetry),
                     "telemetry=N measures the largest attention logit and activation every Nth step; 0 measures none");
  if (loss_plan.chunk_rows < 0)
    throw UsageError("loss_plan's chunk rows must be positive, got " + std::to_string(loss_plan.chunk_rows), loss_plan_syntax());
}

void RunConfig::validate() const {
  model.validate();
  train.validate();
}

namespace {
constexpr PrecisionInfo kPrecisionTable[] = {
    {Precision::automatic, "auto", "", false,
     "the device's: bf16 on a GPU and on a CPU with bf16 matrix instructions (AVX512-BF16 or AMX-BF16), float32 on "
     "other CPUs"},
    {Precision::float32, "float32", "fp32", false, "float32 throughout"},
    {Precision::bf16, "bf16", "bfloat16", true,
     "bf16 matrix products with float32 accumulation; float32 master weights, moments, gates, norms and softmax "
     "statistics (on a CPU: AVX512-BF16 or AMX-BF16)"},
};
static_assert(std::size(kPrecisionTable) == static_cast<size_t>(Precision::bf16) + 1, "a row for every Precision");
}  // namespace

const std::vector<PrecisionInfo>& precisions() {
  static const std::vector<PrecisionInfo> table(std::begin(kPrecisionTable), std::end(kPrecisionTable));
  return table;
}

Precision parse_precision(const std::string& text) {
  std::vector<std::string> names;
  for (const auto& row : precisions()) {
    if (text == row.name || (*row.alias && text == row.alias)) return row.value;
    names.emplace_back(row.name);
  }
  throw UsageError("field 'precision': '" + text + "' is not " + join(names, ", "),
                   "--precision bf16 trains with bf16 matrix products (on a CPU: AVX512-BF16 or AMX), float32 without; "
                   "auto chooses bf16 where the device has them");
}

const char* to_string(Precision precision) { return precisions().at(static_cast<size_t>(precision)).name; }

Precision resolve_precision(Precision precision, bool bf16_units) {
  if (precision != Precision::automatic) return precision;
  return bf16_units ? Precision::bf16 : Precision::float32;
}

bool uses_autocast(Precision precision) { return precisions().at(static_cast<size_t>(precision)).autocast; }

const std::vector<Tier>& tiers() {
  static const std::vector<Tier> all = build_tiers();
  return all;
}

std::vector<std::string> tier_names() {
  std::vector<std::string> names;
  for (const auto& tier : tiers()) names.push_back(tier.name);
  return names;
}

const Tier& find_tier(const std::string& name) {
  for (const auto& tier : tiers())
    if (tier.name == name) return tier;
  const auto names = tier_names();
  throw UsageError("unknown tier '" + name + "'", did_you_mean(name, names) + "valid tiers: " + join(names, ", "));
}

RunConfig make_run_config(const std::string& tier_name, const std::string& arm, int64_t seed) {
  const Tier& tier = find_tier(tier_name);
  RunConfig config;
  config.tier = tier.name;
  config.model = tier.model;
  config.train = tier.train;
  config.model.arm = parse_arm(arm);
  config.seed = seed;
  return config;
}

void set_field(RunConfig& config, const std::string& key, const std::string& value) {
  for (const auto& field : fields()) {
    if (key == field.name) {
      field.set(config, value);
      return;
    }
  }
  throw UsageError("unknown configuration field '" + key + "'",
                   did_you_mean(key, field_names()) + "fields: " + join(field_names(), ", "));
}

namespace {
/// set_field for what a user writes (--set, --config): `tier` may only repeat the run's tier,
/// since a tier is a whole preset and naming another would relabel the run without its shape.
void set_user_field(RunConfig& config, const std::string& key, const std::string& value) {
  if (key == "tier" && value != config.tier)
    throw UsageError("'tier = " + value + "' would only relabel this " + config.tier +
                         " run: a tier is a preset of every field, chosen with --tier",
                     "use --tier " + value + ", then change single fields with --config or --set");
  set_field(config, key, value);
}
}  // namespace

void apply_overrides(RunConfig& config, const std::vector<std::string>& assignments) {
  for (const auto& assignment : assignments) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos)
      throw UsageError("override '" + assignment + "' is not of the form key=value");
    set_user_field(config, trim(assignment.substr(0, eq)), trim(assignment.substr(eq + 1)));
  }
}

RunConfig configure_run(const ConfigRequest& request) {
  RunConfig config = make_run_config(request.tier, request.arm, request.seed);
  if (request.vocab_size > 0) config.model.vocab_size = request.vocab_size;
  if (!request.config_file.empty()) load_config_file(config, request.config_file);
  apply_overrides(config, request.overrides);
  config.validate();
  return config;
}

void load_config_file(RunConfig& config, const std::string& path) {
  InputStream in(open_input(path, Fifo::read_once, "configuration file"));
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw InputError(path + ":" + std::to_string(number) + ": expected 'key = value', got '" + line + "'");
    try {
      set_user_field(config, trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
    } catch (const UsageError& error) {
      throw InputError(path + ":" + std::to_string(number) + ": " + error.what(), error.hint());
    }
  }
}

int64_t model_vocab_size(const TokenFileInfo& tokens) { return tokens.vocab_size; }

void check_vocabulary_fits(const TokenFile& tokens, const ModelConfig& model, const std::string& model_source) {
  if (tokens.info().vocab_size <= model.vocab_size) return;
  throw InputError(tokens.path() + ": token ids go up to " + std::to_string(tokens.info().vocab_size - 1) + " but " +
                       model_source + " has a vocabulary of " + std::to_string(model.vocab_size) +
                       " entries (vocab_size must exceed the largest id)",
                   "use a token file of the model's tokenizer (or, for a new run, leave vocab_size unset: sg-train "
                   "takes the token file's, " + std::to_string(tokens.info().vocab_size) + ")");
}

std::vector<std::pair<std::string, std::string>> to_fields(const RunConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& field : fields()) out.emplace_back(field.name, field.get(config));
  return out;
}

std::vector<std::string> field_names() {
  std::vector<std::string> out;
  for (const auto& field : fields()) out.emplace_back(field.name);
  return out;
}

bool field_optional(const std::string& name) {
  for (const auto& field : fields())
    if (name == field.name) return field.optional;
  return false;
}

std::string field_absent_value(const std::string& name) {
  for (const auto& field : fields())
    if (name == field.name && field.optional) return field.absent;
  throw std::logic_error("field_absent_value: '" + name + "' is not an optional field");
}

}  // namespace sg
