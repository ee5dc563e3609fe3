// toy.cpp — the superposition task of App. D–E: data, the one-head model, training, evaluation.
#include "lib/instruments/toy.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "lib/base/error.h"
#include "lib/base/log.h"

namespace sg::toy {
namespace {

namespace F = torch::nn::functional;

// Independent random streams per seed.
constexpr uint64_t kDictionaryStream = 1;
constexpr uint64_t kDataStream = 2;
constexpr uint64_t kInitStream = 3;

constexpr double kInitStd = 0.02;
// Dimensions summed per seed: of (B, S, N), of (B/G, S, G) and of (B/G, S, G, N).
const std::vector<int64_t> kBatchAndRows = {0, 2};
const std::vector<int64_t> kBlocksQueries = {0, 2};
const std::vector<int64_t> kBlocksQueriesRows = {0, 2, 3};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Logit of an absent table row below the sequence's largest item logit: exp(-1e4) is exactly 0.
constexpr double kAbsentLogit = 1e4;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Rows scaled to unit Euclidean norm.
torch::Tensor unit_rows(const torch::Tensor& x) { return x / x.norm(2, /*dim=*/1, /*keepdim=*/true); }

std::string seconds_since(std::chrono::steady_clock::time_point start) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s";
  return out.str();
}

}  // namespace

StackedBatch stack_batches(const TaskConfig& config, const std::vector<Batch>& batches, const torch::Device& device) {
  const int64_t seeds = static_cast<int64_t>(batches.size());
  const int64_t key_rows = config.routing == Routing::blind ? config.tags : config.features();
  std::vector<torch::Tensor> items, keys, counts, labels;
  for (int64_t s = 0; s < seeds; ++s) {
    const auto& b = batches[s];
    items.push_back(b.items);
    keys.push_back((config.routing == Routing::blind ? b.tags : b.items) + s * key_rows);
    counts.push_back(torch::zeros({b.items.size(0), config.features()}, torch::kFloat)
                         .scatter_add_(1, b.items, torch::ones(b.items.sizes(), torch::kFloat)));
    labels.push_back(b.labels);
  }
  StackedBatch out;
  out.items = torch::stack(items, 1).to(device);     // (B, S, T)
  out.key_rows = torch::stack(keys, 1).to(device);   // (B, S, T)
  out.counts = torch::stack(counts, 1).to(device);   // (B, S, N)
  const auto absent = (out.counts == 0).to(torch::kFloat);
  out.absent_mass = absent + (1.0 - absent) * std::numeric_limits<float>::min();  // (B, S, N)
  out.absent_logit = absent * -kAbsentLogit;                                        // (B, S, N)
  out.labels = torch::stack(labels, 0).to(device);   // (S, B, n_rel)
  return out;
}

std::pair<torch::Tensor, torch::Tensor> stack_tasks(const TaskConfig& config, const std::vector<Task>& tasks,
                                                     const torch::Device& device) {
  std::vector<torch::Tensor> features, keys;
  for (const auto& task : tasks) {
    features.push_back(task.features);
    keys.push_back(config.routing == Routing::blind ? task.tags : task.features);
  }
  return {torch::stack(features).to(device), torch::stack(keys).to(device)};
}

Routing parse_routing(const std::string& name) {
  if (name == "blind") return Routing::blind;
  if (name == "visible") return Routing::visible;
  throw UsageError("unknown condition '" + name + "'", "use blind (channel-blind keys) or visible (routing-visible)");
}

std::string to_string(Routing routing) { return routing == Routing::blind ? "blind" : "visible"; }

void TaskConfig::validate() const {
  if (dim < 1) throw UsageError("toy: dim must be >= 1");
  if (load < 1) throw UsageError("toy: load must be >= 1");
  if (relevant < 1 || relevant >= features())
    throw UsageError("toy: need 1 <= relevant < N = load*dim (" + std::to_string(features()) + ")");
  if (length < 1) throw UsageError("toy: length must be >= 1");
  if (!(relevant_rate > 0.0 && relevant_rate < 1.0)) throw UsageError("toy: relevant_rate must lie in (0, 1)");
  if (tags < 1) throw UsageError("toy: tags must be >= 1");
}

Task make_task(const TaskConfig& config, int64_t seed) {
  config.validate();
  auto generator = seed_generator(seed, kDictionaryStream);
  const int64_t n = config.features(), d = config.dim;
  Task task;
  task.features = unit_rows(torch::randn({n, d}, generator, torch::kFloat));  // (N, d)
  if (n <= d) {
    // No-interference control: orthonormal rows spanning the same space (Gram–Schmidt via QR).
    const auto qr = torch::linalg_qr(task.features.to(torch::kDouble).t());  // Q: (d, N)
    task.features = std::get<0>(qr).t().contiguous().to(torch::kFloat);
  }
  task.tags = unit_rows(torch::randn({config.tags, d}, generator, torch::kFloat));  // (M, d)
  return task;
}

Batch sample_batch(const TaskConfig& config, int64_t batch, at::Generator& generator) {
  const int64_t t = config.length, r = config.relevant, n = config.features();
  const auto integers = torch::TensorOptions().dtype(torch::kLong);
  Batch out;
  out.relevant = torch::rand({batch, t}, generator, torch::kFloat) < config.relevant_rate;
  const auto relevant_items = torch::randint(0, r, {batch, t}, generator, integers);
  const auto irrelevant_items = torch::randint(r, n, {batch, t}, generator, integers);
  out.items = torch::where(out.relevant, relevant_items, irrelevant_items);
  out.tags = torch::randint(0, config.tags, {batch, t}, generator, integers);
  // Column r collects the irrelevant items and is dropped.
  const auto slot = torch::where(out.relevant, out.items, torch::full_like(out.items, r));
  out.labels = torch::zeros({batch, r + 1}, torch::kFloat).scatter_(1, slot, 1.0).narrow(1, 0, r).contiguous();
  return out;
}

ToyArm parse_toy_arm(const std::string& name) {
  if (name == "oracle") return {name, Arm{}, true};
  const Arm arm = parse_arm(name);
  if (arm_has(arm, ArmCapability::sink_position))
    throw UsageError("arm '" + name + "' has no toy form: it has " + describe(ArmCapability::sink_position) +
                         ", an extra sequence position of the language model",
                     "the toy's arms: " + toy_arm_choices());
  return {arm.name(), arm, false};
}

std::string toy_arm_choices() {
  std::string excluded;
  for (const auto& option : arm_options())
    for (const auto capability : option.capabilities)
      if (capability == ArmCapability::sink_position) excluded += std::string(excluded.empty() ? "" : ", ") + option.name;
  return "oracle, or " + arm_choices() + "; but no arm with " + excluded + " (" +
         describe(ArmCapability::sink_position) + " needs a sequence model)";
}

const std::vector<std::string>& figure_arm_names() {
  static const std::vector<std::string> names = {"baseline", "offbyone", "normgate", "renorm", "oracle"};
  return names;
}

int64_t query_block(int64_t batch, int64_t limit) {
  int64_t block = 1;
  while (block * 4 <= limit && batch % (block * 4) == 0) block *= 4;
  return block;
}

at::Generator seed_generator(int64_t seed, uint64_t stream) {
  return at::make_generator<at::CPUGeneratorImpl>(splitmix64(splitmix64(static_cast<uint64_t>(seed)) ^ stream));
}

ToyModelImpl::ToyModelImpl(const TaskConfig& config, ToyArm arm, const std::vector<int64_t>& seeds, double gate_beta)
    : config_(config), arm_(std::move(arm)), gate_beta_(gate_beta) {
  config.validate();
  const int64_t s = static_cast<int64_t>(seeds.size()), d = config.dim, r = config.relevant;
  std::vector<torch::Tensor> queries, keys, values, readouts;
  for (const int64_t seed : seeds) {
    auto generator = seed_generator(seed, kInitStream);
    queries.push_back(torch::randn({d}, generator, torch::kFloat) * kInitStd);
    keys.push_back(torch::randn({d, d}, generator, torch::kFloat) * kInitStd);
    values.push_back(torch::randn({d, d}, generator, torch::kFloat) * kInitStd);
    readouts.push_back(torch::randn({r, d}, generator, torch::kFloat) * kInitStd);
  }
  query = register_parameter("query", torch::stack(queries));
  key = register_parameter("key", torch::stack(keys));
  value = register_parameter("value", torch::stack(values));
  readout = register_parameter("readout", torch::stack(readouts));
  readout_bias = register_parameter("readout_bias", torch::zeros({s, r}));
  // The arm's parameters from the arm table's rows (lib/run/arm.h): seed s is head s, of dimension
  // d in a model of width d, so each seed's tensor has the table's shape at H = 1, d_model = d, and
  // they are stacked along a seed axis that takes the place of a leading heads extent (gate_w
  // (S, d), out_gate (S, d) head-wise) or comes first ((S, d, d) element-wise). Normal draws come
  // from each seed's generator after the shared parameters, so every arm's q, W_k, W_v, W_r stay
  // the same.
  std::vector<at::Generator> arm_streams;
  for (const int64_t seed : seeds) {
    auto generator = seed_generator(seed, kInitStream);
    const std::vector<std::vector<int64_t>> shared = {{d}, {d, d}, {d, d}, {r, d}};  // q, W_k, W_v, W_r
    for (const auto& shape : shared) torch::randn(shape, generator, torch::kFloat);  // drawn again, skipped
    arm_streams.push_back(generator);
  }
  ArmParameters registered;
  for (const auto& parameter : sg::arm_parameters(arm_.arm)) {
    if (!parameter.per_layer) throw UsageError(std::string("toy: no place for the arm parameter ") + parameter.name);
    auto shape = parameter.shape_of(/*heads=*/1, /*head_dim=*/d, /*d_model=*/d);
    if (parameter.shape.front() == Extent::heads) shape.erase(shape.begin());
    std::vector<torch::Tensor> per_seed;
    for (auto& generator : arm_streams) per_seed.push_back(initial_arm_parameter(parameter, shape, gate_beta, generator));
    registered.field(parameter.name) = register_parameter(parameter.name, torch::stack(per_seed));
  }
  sink_logit = registered.sink_logit;
  gate_tau = registered.gate_tau;
  gate_w = registered.gate_w;
  gate_b = registered.gate_b;
  out_gate = registered.out_gate;
}

ArmParameters ToyModelImpl::attend_parameters() const {
  ArmParameters params{sink_logit, gate_tau, gate_w, gate_b, {}};
  // attend() reads one W_theta (rows, S·d) for all heads from hidden states (B, Tq, S·d); seed s's
  // W_theta (a row (d) head-wise, (d, d) element-wise) is block s of a block-diagonal matrix, and
  // its hidden state is its query q_s.
  if (out_gate.defined()) params.out_gate = torch::block_diag(out_gate.unbind(0));
  return params;
}

torch::Tensor ToyModelImpl::attend_seeds(const torch::Tensor& queries, const torch::Tensor& keys,
                                         const torch::Tensor& reads, const torch::Tensor& keep,
                                         std::vector<AttentionTelemetry>* telemetry) const {
  AttentionHooks hooks;
  if (keep.defined()) hooks.corrupt = [keep](const torch::Tensor& v, int64_t) { return v * keep.to(v.scalar_type()); };
  if (telemetry) hooks.telemetry = store_telemetry(*telemetry);
  AttendOptions options;
  options.arm = arm_.arm;
  options.gate_beta = gate_beta_;
  options.causal = false;
  options.hooks = hooks.active() ? &hooks : nullptr;
  options.backend = AttentionBackend::explicit_math;  // the fused kernels need equal q, k and v widths
  // The output gate's hidden state at every query of a seed is its q: (q_1 … q_S) per query.
  const int64_t width = query.size(0) * query.size(1);
  if (out_gate.defined()) options.gate_input = query.reshape({1, 1, width}).expand({queries.size(0), queries.size(2), width});
  return attend(queries, keys, reads, attend_parameters(), options);
}

torch::Tensor ToyModelImpl::forward(const torch::Tensor& features, const torch::Tensor& key_sources,
                                    const StackedBatch& batch, int64_t block,
                                    std::vector<AttentionTelemetry>* telemetry) {
  const int64_t b = batch.items.size(0), s = batch.items.size(1), t = batch.items.size(2);
  const int64_t n = config_.features(), d = config_.dim, g = block, p = b / block;
  if (arm_.arm.filter == Filter::keygate) return forward_items(features, key_sources, batch, telemetry);
  if (g < 1 || b % g != 0) throw UsageError("toy: query block " + std::to_string(g) + " does not divide the batch");

  // Item logits s_bt = q.(W_k x)/sqrt(d) = (W_k^T q).x/sqrt(d), one per row of the key inputs.
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto direction = torch::matmul(key.transpose(1, 2), query.unsqueeze(-1));               // (S, d, 1)
  const auto row_logits = torch::matmul(key_sources, direction).reshape({-1}) * scale;          // (S*K)
  const auto item_logits = row_logits.index_select(0, batch.key_rows.reshape({-1})).view({b, s, t});  // (B, S, T)
  // Items sharing a feature merge into one key: L_bn = log sum_{t: item_bt = n} exp(s_bt).
  const auto top = std::get<0>(item_logits.detach().max(-1, /*keepdim=*/true));  // (B, S, 1)
  const auto mass =
      torch::zeros({b, s, n}, item_logits.options()).scatter_add(2, batch.items, (item_logits - top).exp());
  // Absent rows: log(0 + 1) + top - 10^4. Present rows: log(mass + 1e-38) + top, which is exact for
  // any mass above 1e-31 and never log(0).
  const auto merged = (mass + batch.absent_mass).log() + (top + batch.absent_logit);  // (B, S, N)

  // Blocks of G sequences: one-hot queries sqrt(G)·e_g, key n of block p holds (L_gn)_g.
  const auto keys = merged.view({p, g, s, n}).permute({0, 2, 3, 1}).contiguous();  // (P, S, N, G)
  const auto one_hot = torch::eye(g, merged.options()) * std::sqrt(static_cast<double>(g));
  const auto queries = one_hot.expand({p, s, g, g}).contiguous();                  // (P, S, G, G)
  const auto value_table = torch::matmul(features, value.transpose(1, 2));  // (S, N, d): v_n = W_v f_n
  const auto reads = value_table.unsqueeze(0).expand({p, s, n, d});          // (P, S, N, d), a view

  // The oracle's ground truth: the rows of irrelevant features (n >= n_rel) are every irrelevant item's read.
  const auto keep = arm_.oracle ? (torch::arange(n, merged.options()) < config_.relevant).to(torch::kFloat).view({1, 1, n, 1})
                                : torch::Tensor();
  const auto y = attend_seeds(queries, keys, reads, keep, telemetry);  // (P, S, G, d)
  return torch::baddbmm(readout_bias.unsqueeze(1), y.permute({1, 0, 2, 3}).reshape({s, b, d}),
                        readout.transpose(1, 2));  // (S, B, n_rel)
}

torch::Tensor ToyModelImpl::forward_items(const torch::Tensor& features, const torch::Tensor& key_sources,
                                          const StackedBatch& batch, std::vector<AttentionTelemetry>* telemetry) {
  const int64_t b = batch.items.size(0), s = batch.items.size(1), t = batch.items.size(2);
  const int64_t n = config_.features(), d = config_.dim;
  // One query per sequence; keys k_bt = W_k·(key input) and reads v_bt = W_v·x_bt of every item.
  const auto key_table = torch::matmul(key_sources, key.transpose(1, 2)).reshape({-1, d});  // (S·K, d)
  const auto value_table = torch::matmul(features, value.transpose(1, 2)).reshape({-1, d});  // (S·N, d)
  const auto offsets = (torch::arange(s, batch.items.options()) * n).view({1, s, 1});
  const auto keys = key_table.index_select(0, batch.key_rows.reshape({-1})).view({b, s, t, d});             // (B, S, T, d)
  const auto reads = value_table.index_select(0, (batch.items + offsets).reshape({-1})).view({b, s, t, d});  // (B, S, T, d)
  const auto queries = query.view({1, s, 1, d}).expand({b, s, 1, d});                                        // (B, S, 1, d)

  const auto keep = arm_.oracle ? (batch.items < config_.relevant).to(torch::kFloat).unsqueeze(-1)  // (B, S, T, 1)
                                : torch::Tensor();
  const auto y = attend_seeds(queries, keys, reads, keep, telemetry);  // (B, S, 1, d)
  return torch::baddbmm(readout_bias.unsqueeze(1), y.squeeze(2).transpose(0, 1), readout.transpose(1, 2));
}

namespace {

/// Per-seed sums over the evaluation draws, each (S) in float64.
struct EvaluationSums {
  torch::Tensor wrong, wrong_sequences, bce, relevant_mass, phantom_mass;
  torch::Tensor gate_relevant, gate_irrelevant, count_relevant, count_irrelevant, output_gate_sum;

  EvaluationSums(int64_t seeds, const torch::Device& device) {
    const auto zeros = [&] { return torch::zeros({seeds}, torch::TensorOptions().dtype(torch::kDouble).device(device)); };
    for (auto* sum : {&wrong, &wrong_sequences, &bce, &relevant_mass, &phantom_mass, &gate_relevant, &gate_irrelevant,
                      &count_relevant, &count_irrelevant, &output_gate_sum})
      *sum = zeros();
  }

  /// The routing mass on the relevant items and the gates on relevant and irrelevant ones, from
  /// one draw's telemetry (layer 0, the toy's only layer).
  void add_routing(const AttentionTelemetry& record, const StackedBatch& batch, const TaskConfig& config, bool per_item) {
    const int64_t r = config.relevant;
    if (record.phantom_mass.defined()) phantom_mass += record.phantom_mass.to(torch::kDouble).sum(kBlocksQueries);
    // Output gates (B/G, S, G, 1 or d), or (B, S, 1, 1 or d) per item: one query per sequence either way.
    if (record.output_gates.defined())
      output_gate_sum += record.output_gates.to(torch::kDouble).mean(-1).sum(kBlocksQueries);
    if (per_item) {
      // Per item: weights (B, S, 1, T), phantom mass (B, S, 1), gates (B, S, T).
      const auto relevant = (batch.items < r).to(torch::kDouble);  // (B, S, T)
      const auto irrelevant = 1.0 - relevant;
      relevant_mass += (record.weights.to(torch::kDouble).squeeze(2) * relevant).sum(kBatchAndRows);
      if (record.gates.defined()) {
        const auto gates = record.gates.to(torch::kDouble);
        gate_relevant += (gates * relevant).sum(kBatchAndRows);
        gate_irrelevant += (gates * irrelevant).sum(kBatchAndRows);
      }
      count_relevant += relevant.sum(kBatchAndRows);
      count_irrelevant += irrelevant.sum(kBatchAndRows);
      return;
    }
    // Per table row: weights (B/G, S, G, N), phantom mass (B/G, S, G), gates (B/G, S, N).
    const auto weights = record.weights.to(torch::kDouble);
    relevant_mass += weights.narrow(3, 0, r).sum(kBlocksQueriesRows);
    const auto counts = batch.counts.to(torch::kDouble);  // (B, S, N): items per row
    if (record.gates.defined()) {
      const auto per_row_item = counts * record.gates[0].to(torch::kDouble).unsqueeze(0);  // (B, S, N)
      gate_relevant += per_row_item.narrow(2, 0, r).sum(kBatchAndRows);
      gate_irrelevant += per_row_item.narrow(2, r, config.features() - r).sum(kBatchAndRows);
    }
    count_relevant += counts.narrow(2, 0, r).sum(kBatchAndRows);
    count_irrelevant += counts.narrow(2, r, config.features() - r).sum(kBatchAndRows);
  }

  /// One row per seed: the sums as means over the sequences, labels or items.
  std::vector<RunResult> rows(const ToyArm& arm, const TaskConfig& config, const std::vector<int64_t>& seeds,
                              int64_t sequence_count) const {
    const double sequences = static_cast<double>(sequence_count);
    const double labels = sequences * static_cast<double>(config.relevant);
    std::vector<RunResult> out;
    for (size_t i = 0; i < seeds.size(); ++i) {
      const int64_t s = static_cast<int64_t>(i);
      RunResult row;
      row.condition = to_string(config.routing);
      row.load = config.load;
      row.arm = arm.name;
      row.seed = seeds[i];
      row.error = wrong[s].item<double>() / labels;
      row.sequence_error = wrong_sequences[s].item<double>() / sequences;
      row.eval_bce = bce[s].item<double>() / labels;
      row.relevant_mass = relevant_mass[s].item<double>() / sequences;
      row.phantom_mass = arm.arm.has_phantom() ? phantom_mass[s].item<double>() / sequences : kNaN;
      const bool gated = arm.arm.has_gate();
      row.gate_relevant = gated ? gate_relevant[s].item<double>() / count_relevant[s].item<double>() : kNaN;
      row.gate_irrelevant = gated ? gate_irrelevant[s].item<double>() / count_irrelevant[s].item<double>() : kNaN;
      row.output_gate_mean = arm.arm.has_output_gate() ? output_gate_sum[s].item<double>() / sequences : kNaN;
      out.push_back(row);
    }
    return out;
  }
};

}  // namespace

std::vector<RunResult> evaluate(ToyModel& model, const TaskConfig& config, const std::vector<int64_t>& seeds,
                                const std::vector<Task>& tasks, const TrainOptions& options) {
  torch::NoGradGuard no_grad;
  const auto device = options.device;
  const auto [features, key_sources] = stack_tasks(config, tasks, device);
  const int64_t s = static_cast<int64_t>(seeds.size());
  EvaluationSums sums(s, device);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(options.eval_seed));
  for (int64_t done = 0; done < options.eval_sequences; done += options.eval_chunk) {
    const int64_t n = std::min(options.eval_chunk, options.eval_sequences - done);
    // One draw, the same sequences (as feature indices) under every seed's dictionary.
    const auto chunk = sample_batch(config, n, generator);
    const auto batch = stack_batches(config, std::vector<Batch>(s, chunk), device);
    std::vector<AttentionTelemetry> telemetry;
    const int64_t block = query_block(n, options.query_block);
    const auto logits = model->forward(features, key_sources, batch, block, &telemetry);  // (S, B, n_rel)
    const auto mistakes = (logits > 0) != (batch.labels > 0.5);
    sums.wrong += mistakes.sum({1, 2}).to(torch::kDouble);
    sums.wrong_sequences += mistakes.any(2).sum(1).to(torch::kDouble);
    sums.bce += F::binary_cross_entropy_with_logits(logits, batch.labels,
                                                    F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone))
                    .sum({1, 2})
                    .to(torch::kDouble);
    sums.add_routing(telemetry.at(0), batch, config, model->per_item());
  }
  return sums.rows(model->arm(), config, seeds, options.eval_sequences);
}

namespace {

/// Refuses settings no run can use, naming them.
void check_train_options(const TaskConfig& config, const TrainOptions& options, const std::vector<ToyArm>& arms,
                         const std::vector<int64_t>& seeds) {
  config.validate();
  if (arms.empty() || seeds.empty()) throw UsageError("toy: need at least one arm and one seed");
  const std::pair<const char*, int64_t> counts[] = {{"steps (--steps)", options.steps},
                                                    {"batch (--batch-size)", options.batch},
                                                    {"eval_sequences (--eval-sequences)", options.eval_sequences},
                                                    {"eval_chunk", options.eval_chunk},
                                                    {"loss_window (--loss-window)", options.loss_window},
                                                    {"query_block (--query-block)", options.query_block}};
  for (const auto& [name, value] : counts)
    if (value < 1) throw UsageError("toy: " + std::string(name) + " must be >= 1, got " + std::to_string(value));
  if (!(options.lr > 0)) throw UsageError("toy: the learning rate (--lr) must be positive");
  if (!(options.gate_beta > 0)) throw UsageError("toy: gate_beta (--gate-beta) must be positive");
}

/// " ARM/seed S" for every (arm, seed) whose loss of this step is not finite.
std::string non_finite_losses(const std::vector<ToyArm>& arms, const std::vector<int64_t>& seeds,
                              const std::vector<torch::Tensor>& losses) {
  std::string culprits;
  for (size_t a = 0; a < arms.size(); ++a)
    for (size_t s = 0; s < seeds.size(); ++s)
      if (!std::isfinite(losses[a][static_cast<int64_t>(s)].item<double>()))
        culprits += " " + arms[a].name + "/seed " + std::to_string(seeds[s]);
  return culprits;
}

}  // namespace

std::vector<RunResult> train_and_evaluate(const TaskConfig& config, const TrainOptions& options,
                                          const std::vector<ToyArm>& arms, const std::vector<int64_t>& seeds,
                                          const StepCallback& on_step) {
  check_train_options(config, options, arms, seeds);
  const int64_t block = query_block(options.batch, options.query_block);
  const auto device = options.device;
  const auto start = std::chrono::steady_clock::now();
  const std::string where = to_string(config.routing) + " load " + std::to_string(config.load);

  std::vector<Task> tasks;
  std::vector<at::Generator> streams;
  for (const int64_t seed : seeds) {
    tasks.push_back(make_task(config, seed));
    streams.push_back(seed_generator(seed, kDataStream));
  }
  const auto [features, key_sources] = stack_tasks(config, tasks, device);

  std::vector<ToyModel> models;
  std::vector<torch::Tensor> parameters;
  for (const auto& arm : arms) {
    models.emplace_back(config, arm, seeds, options.gate_beta);
    models.back()->to(device);
    for (const auto& p : models.back()->parameters()) parameters.push_back(p);
  }
  torch::optim::Adam optimizer(parameters, torch::optim::AdamOptions(options.lr).betas({0.9, 0.999}).eps(1e-8));

  const double per_label = 1.0 / static_cast<double>(options.batch * config.relevant);
  const int64_t window = std::max<int64_t>(1, std::min(options.loss_window, options.steps));
  std::vector<torch::Tensor> loss_sums(arms.size());
  for (auto& sum : loss_sums) sum = torch::zeros({static_cast<int64_t>(seeds.size())}, torch::kDouble);
  std::vector<Batch> batches(seeds.size());
  for (int64_t step = 1; step <= options.steps; ++step) {
    for (size_t s = 0; s < seeds.size(); ++s) batches[s] = sample_batch(config, options.batch, streams[s]);
    const auto batch = stack_batches(config, batches, device);
    torch::Tensor total;
    std::vector<torch::Tensor> losses;
    for (auto& model : models) {
      const auto logits = model->forward(features, key_sources, batch, block);  // (S, B, n_rel)
      // Summed, then scaled: each seed's gradient is exactly that of its own mean BCE.
      const auto per_seed =
          F::binary_cross_entropy_with_logits(logits, batch.labels,
                                              F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone))
              .sum({1, 2}) * per_label;  // (S)
      total = total.defined() ? total + per_seed.sum() : per_seed.sum();
      losses.push_back(per_seed.detach().to(torch::kCPU, torch::kDouble));
    }
    optimizer.zero_grad();
    total.backward();
    optimizer.step();

    const double total_value = total.item<double>();
    if (!std::isfinite(total_value))
      throw NumericError("sg-toy (" + where + "): non-finite loss at step " + std::to_string(step) + ":" +
                         non_finite_losses(arms, seeds, losses));
    if (step > options.steps - window)
      for (size_t a = 0; a < arms.size(); ++a) loss_sums[a] += losses[a];
    if (on_step) on_step(step, losses);
    if (options.log_interval > 0 && (step % options.log_interval == 0 || step == options.steps)) {
      std::ostringstream line;
      line.precision(4);
      line << "sg-toy: " << where << ": step " << step << "/" << options.steps << "  bce";
      for (size_t a = 0; a < arms.size(); ++a) line << " " << arms[a].name << "=" << losses[a].mean().item<double>();
      log::info(line.str() + "  (" + seconds_since(start) + ")");
    }
  }

  std::vector<RunResult> rows;
  for (size_t a = 0; a < arms.size(); ++a) {
    auto evaluated = evaluate(models[a], config, seeds, tasks, options);
    for (size_t s = 0; s < seeds.size(); ++s) {
      evaluated[s].train_bce = loss_sums[a][s].item<double>() / static_cast<double>(window);
      rows.push_back(evaluated[s]);
    }
  }
  log::info("sg-toy: " + where + ": trained and evaluated " + std::to_string(arms.size()) + " arms x " +
            std::to_string(seeds.size()) + " seeds (" + seconds_since(start) + ")");
  return rows;
}

ResultTable to_table(const std::vector<RunResult>& rows) {
  ResultTable table;
  table.add_column("condition", Role::key, ColumnType::string);
  table.add_column("load", Role::key, ColumnType::int64);
  table.add_column("arm", Role::key, ColumnType::string);
  table.add_column("seed", Role::key, ColumnType::int64);
  for (const char* name : {"error", "sequence_error", "eval_bce", "train_bce", "relevant_mass", "phantom_mass",
                           "gate_relevant", "gate_irrelevant", "output_gate_mean"})
    table.add_column(name, Role::value, ColumnType::float64);
  for (const auto& r : rows)
    table.append_row({r.condition, r.load, r.arm, r.seed, r.error, r.sequence_error, r.eval_bce, r.train_bce,
                      r.relevant_mass, r.phantom_mass, r.gate_relevant, r.gate_irrelevant, r.output_gate_mean});
  return table;
}

}  // namespace sg::toy
