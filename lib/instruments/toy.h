// toy.h — the superposition task of paper App. D–E (Figure 3): one attention head, one learned
// query, items drawn from a dictionary of N = load·d unit features, a linear readout that must
// report which of the n_rel relevant features occur in the sequence.
//
// The head is the language models' own attention arithmetic, sg::attend (lib/attention.h), with
// one non-causal query; the arms are sg::Arm values, and the oracle is the baseline arm with the
// corruption hook zeroing every irrelevant read by ground truth (in training and evaluation).
//
// Construction (App. E, with the choices the appendix leaves open):
//   dictionary  N unit vectors in R^d, Gaussian then normalised; orthonormalised when N <= d.
//   items       each of the T items is relevant with probability p (uniform over the n_rel
//               relevant features), else uniform over the N − n_rel irrelevant ones.
//   keys        channel-blind: the key input is a tag drawn uniformly from a bank of random unit
//               vectors, independent of the item; routing-visible: the key input is the item.
//   head        k_j = W_k·(key input), v_j = W_v·x_j (the LM head's key and value projections;
//               without W_v every read would have norm 1/√d and a norm gate would be constant),
//               a single learned query q; no feed-forward network, no layer normalisation.
//   readout     logits = W_r·y + b_r over the n_rel relevant features; multi-label BCE.
//   init        q, W_k, W_v, W_r ~ N(0, 0.02), b_r = 0 (the LM's init); arm parameters as in the
//               LM (tau_h = −4/β, b_h = 0, w_h = 0, gate b_h = 4).
//   optimiser   Adam (β1 0.9, β2 0.999, ε 1e-8), constant learning rate, no weight decay, no
//               clipping: the appendix gives only the learning rate.
//
// How attend() is called. Every read is a row of a small table (the projected dictionary), so the
// head is evaluated over the N table rows instead of the T items: the items of a sequence that
// share a feature merge into one key whose logit is the log-sum-exp of theirs,
//   L_bn = log sum_{t : item_bt = n} exp(s_bt),   s_bt = q.k_bt / sqrt(d)   (absent rows: -inf),
// which leaves the softmax, the phantom column, each read's gate, the routing-slot bias log g_n and
// the aggregate exactly as over the items (sum_t e^{s_t} f(v_{item_t}) = sum_n e^{L_n} f(v_n)).
// attend() computes its logits as q.k/sqrt(d_k) and takes no other logit input, so L enters as
// q.k: a block of G sequences forms the G queries of one attend() batch entry, query g is the
// scaled one-hot sqrt(G)·e_g and key n holds (L_1n … L_Gn), so q_g.k_n/sqrt(G) = L_gn exactly
// (G a power of 4, sqrt(G) a power of 2). Matrix products over the table and (B, N) logits replace
// some fifteen memory-bound passes over materialised per-item reads (B·T·d floats each), which is
// what makes the 120-run grid fit on two cores (2.5x faster at load 8, 7x at load 1, measured).
// Absent rows get a logit 10^4 below the sequence's largest item logit: a weight of exactly zero.
//
// The key gate (keygate) breaks the merged rows: it decides per item on the key k_bt, and in the
// channel-blind condition the items of one feature carry different tags, hence different gates. A
// row could still carry the exact effective gate, sum_{t: item_bt = n} e^{s_bt} g_bt / e^{L_bn} per
// (sequence, row), since its aggregate is sum_t e^{s_bt} g_bt v_n; but attend() decides gates
// itself from its keys, and feeding it per-query gates would add an interface for this one
// caller. Key-gate arms therefore run over the items instead, in both conditions: queries q
// (B, S, 1, d), keys W_k·(key input) and reads W_v·x per item (B, S, T, d), and attend() computes
// the key gate itself (w_h = 0, b_h = 4 at init, as in the LM). Exact and simple; it materialises
// B·T·d floats per seed, a few times slower than the table. Telemetry then holds weights
// (B, S, 1, T) and gates (B, S, T) per item, and evaluate() averages them over items as it
// averages the table's rows weighted by item counts.
//
// The output gate (outgate, outgate-elem) multiplies the head's output y by sigma(x W_theta^T), x
// the query position's hidden state. The toy's query is a learned vector q per seed, not computed
// from content, so x = q and the gate is sigma(q W_theta^T): a learned constant per head (head-wise)
// or per dimension (element-wise), W_theta ~ N(0, 0.02) per seed as in the LM. It can scale the
// head's output but cannot decide per sequence. attend() applies it after the softmax and the
// aggregate, so with a zero option (sinklogit+outgate) it composes as in the LM: a phantom that
// takes mass per sequence, then a constant scale. attend() takes one W_theta for all heads, so the
// seeds' W_theta form a block-diagonal matrix and the hidden state is (q_1 … q_S).
//
// Several seeds train in one pass as the heads of one attend() call (seed s = head s, each head
// with its own dictionary, data, query and projections), and several arms train side by side in
// one process; the summed loss leaves every (arm, seed) exactly independent.
//
// Not here: file output (results.h), the command line (cmd/sg-toy.cpp).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/io/results.h"
#include "lib/run/arm.h"
#include "lib/model/attention.h"

namespace sg::toy {

/// What the keys carry (App. E, "The keys are the design variable").
enum class Routing {
  blind,    // channel-blind: a random tag per item, no information about its content
  visible,  // routing-visible: the key input is the item itself
};

/// "blind" or "visible"; UsageError otherwise.
Routing parse_routing(const std::string& name);
std::string to_string(Routing routing);

/// The task of one condition and load.
struct TaskConfig {
  Routing routing = Routing::blind;
  int64_t dim = 64;             // d, the width of features, keys, reads and query
  int64_t load = 1;             // N / d, features per dimension
  int64_t relevant = 16;        // n_rel: features 0 … n_rel−1 are relevant
  int64_t length = 64;          // T, items per sequence
  double relevant_rate = 0.15;  // probability that an item is a relevant feature
  int64_t tags = 4096;          // size of the bank of random key tags (channel-blind)

  int64_t features() const { return load * dim; }
  /// Throws UsageError when a field is out of range.
  void validate() const;
};

/// Training and evaluation of every arm and seed of one condition and load.
struct TrainOptions {
  int64_t steps = 4000;
  int64_t batch = 256;           // sequences per step
  double lr = 1e-3;
  double gate_beta = 8.0;        // β of the norm gate and the routing-slot control
  int64_t eval_sequences = 4096; // the fixed held-out evaluation set
  int64_t eval_seed = 1234;      // seeds the evaluation set, the same for every run
  int64_t eval_chunk = 512;      // sequences per evaluation pass
  int64_t loss_window = 100;     // train_bce is the mean over this many final steps
  int64_t log_interval = 500;    // steps between progress lines on stderr (0: none)
  int64_t query_block = 64;      // G: sequences per attend() batch entry (a power of 4; the
                                 // largest power of 4 <= G dividing the batch is used)
  torch::Device device = torch::kCPU;
};

/// The random objects that one seed fixes.
struct Task {
  torch::Tensor features;  // (N, d) float32 unit rows; orthonormal rows when N <= d
  torch::Tensor tags;      // (M, d) float32 unit rows, the channel-blind key tags
};

/// The dictionary and tag bank of `seed` (the same for every arm).
Task make_task(const TaskConfig& config, int64_t seed);

/// A batch of sequences.
struct Batch {
  torch::Tensor items;     // (B, T) int64 feature index in [0, N)
  torch::Tensor tags;      // (B, T) int64 tag index in [0, M)
  torch::Tensor relevant;  // (B, T) bool, items < n_rel
  torch::Tensor labels;    // (B, n_rel) float32, 1 where relevant feature i occurs
};

/// Draws `batch` sequences from `generator` (a CPU generator).
Batch sample_batch(const TaskConfig& config, int64_t batch, at::Generator& generator);

/// An arm of the toy: an attention arm, or the oracle (baseline arm with irrelevant reads zeroed).
struct ToyArm {
  std::string name;
  Arm arm;
  bool oracle = false;
};

/// "oracle" or any attention arm name except the sink token (it needs a sequence model), key
/// gate and output gates included; UsageError otherwise.
ToyArm parse_toy_arm(const std::string& name);
/// The arms the toy takes, from the arm table, for --help and hints: "oracle, or baseline, …
/// (arm_choices); but no arm with sinktoken (…)".
std::string toy_arm_choices();

/// The arms of Figure 3: baseline, offbyone, normgate, renorm, oracle.
const std::vector<std::string>& figure_arm_names();

/// A generator for one seed and one purpose (dictionary, data, init), distinct for each pair.
at::Generator seed_generator(int64_t seed, uint64_t stream);

/// The per-seed data of one step, stacked along the seed (head) axis.
struct StackedBatch {
  torch::Tensor items;     // (B, S, T) int64 feature index into seed s's dictionary
  torch::Tensor key_rows;  // (B, S, T) int64 row of the stacked key inputs (S·K rows), offsets included
  torch::Tensor counts;    // (B, S, N) float32 occurrences of each feature in the sequence
  torch::Tensor absent_mass;   // (B, S, N) float32: 1 where the feature is absent, else 1e-38
  torch::Tensor absent_logit;  // (B, S, N) float32: -10^4 where the feature is absent, else 0
  torch::Tensor labels;    // (S, B, n_rel) float32
};

/// Stacks the seeds' batches (seed s -> head s).
StackedBatch stack_batches(const TaskConfig& config, const std::vector<Batch>& batches, const torch::Device& device);

/// The seeds' dictionaries (S, N, d) and key inputs (S, K, d): the tag banks (blind) or the
/// dictionaries again (visible).
std::pair<torch::Tensor, torch::Tensor> stack_tasks(const TaskConfig& config, const std::vector<Task>& tasks,
                                                    const torch::Device& device);

/// The largest power of 4 that is <= limit and divides batch (1 at least).
int64_t query_block(int64_t batch, int64_t limit);

/// One arm of the head for S seeds at once: seed s is head s of a single attend() call.
class ToyModelImpl : public torch::nn::Module {
 public:
  /// Parameters of seed seeds[s] drawn from seed_generator(seeds[s], init stream), in the same
  /// order for every arm, so that arms with one seed start from the same q, W_k, W_v, W_r.
  ToyModelImpl(const TaskConfig& config, ToyArm arm, const std::vector<int64_t>& seeds, double gate_beta);

  /// Readout logits (S, B, n_rel). features (S, N, d) and key_sources (S, K, d) are the stacked
  /// dictionaries and key inputs; block is G (query_block). With telemetry, attend() records its
  /// measurements there: weights (B/G, S, G, N) over the table rows, gates and reads per row; for
  /// a key-gate arm (per_item()) weights (B, S, 1, T) over the items, gates and reads per item,
  /// and block is unused.
  torch::Tensor forward(const torch::Tensor& features, const torch::Tensor& key_sources, const StackedBatch& batch,
                        int64_t block, std::vector<AttentionTelemetry>* telemetry = nullptr);

  const ToyArm& arm() const { return arm_; }
  /// The arm's parameters per seed (out_gate as the per-seed W_theta, not yet block-diagonal).
  ArmParameters arm_parameters() const { return {sink_logit, gate_tau, gate_w, gate_b, out_gate}; }
  /// True when forward() runs over the items (key-gate arms) rather than over the table rows.
  bool per_item() const { return arm_.arm.filter == Filter::keygate; }

  torch::Tensor query;         // (S, d)
  torch::Tensor key;           // (S, d, d) W_k
  torch::Tensor value;         // (S, d, d) W_v
  torch::Tensor readout;       // (S, n_rel, d) W_r
  torch::Tensor readout_bias;  // (S, n_rel) b_r
  torch::Tensor sink_logit;    // (S) b_h of a sink-logit arm
  torch::Tensor gate_tau;      // (S) tau_h of the norm gate / routing-slot control
  torch::Tensor gate_w;        // (S, d) w_h of the projection or key gate
  torch::Tensor gate_b;        // (S) b_h of the projection or key gate
  torch::Tensor out_gate;      // (S, d) head-wise or (S, d, d) element-wise: W_theta of the output gate

 private:
  /// The parameters as attend() takes them for S heads: W_theta^T block-diagonal over the seeds.
  ArmParameters attend_parameters() const;
  /// attend() over the seeds as heads: queries (X, S, Q, ·), keys and reads (X, S, K, ·); `keep`
  /// (undefined but for the oracle) multiplies the reads; the output gate's input is each seed's q.
  torch::Tensor attend_seeds(const torch::Tensor& queries, const torch::Tensor& keys, const torch::Tensor& reads,
                             const torch::Tensor& keep, std::vector<AttentionTelemetry>* telemetry) const;
  /// forward() over the items: queries (B, S, 1, d), keys and reads (B, S, T, d).
  torch::Tensor forward_items(const torch::Tensor& features, const torch::Tensor& key_sources,
                              const StackedBatch& batch, std::vector<AttentionTelemetry>* telemetry);

  TaskConfig config_;
  ToyArm arm_;
  double gate_beta_;
};
TORCH_MODULE(ToyModel);

/// The outcome of one (condition, load, arm, seed) run.
struct RunResult {
  std::string condition;  // "blind" or "visible"
  int64_t load = 0;
  std::string arm;
  int64_t seed = 0;
  double error = 0;           // per-label error rate of (logit > 0) on the evaluation set
  double sequence_error = 0;  // fraction of evaluation sequences with any label wrong
  double eval_bce = 0;        // mean binary cross-entropy (nats) on the evaluation set
  double train_bce = 0;       // mean training BCE over the last loss_window steps
  double relevant_mass = 0;   // mean routing mass on relevant items (phantom excluded)
  double phantom_mass = 0;    // mean routing mass on the phantom; NaN without one
  double gate_relevant = 0;   // mean gate value of relevant reads; NaN without a gate
  double gate_irrelevant = 0; // mean gate value of irrelevant reads; NaN without a gate
  double output_gate_mean = 0;  // mean output gate sigma(q W_theta^T) (over the head's dimensions,
                                // element-wise) on the evaluation set; NaN without an output gate
};

/// Metrics of trained models on the fixed evaluation set: one RunResult per seed, in seed order
/// (condition, load, arm and seed filled in).
std::vector<RunResult> evaluate(ToyModel& model, const TaskConfig& config, const std::vector<int64_t>& seeds,
                                const std::vector<Task>& tasks, const TrainOptions& options);

/// Called after every training step with the step (1-based) and each arm's loss per seed.
using StepCallback = std::function<void(int64_t step, const std::vector<torch::Tensor>& losses)>;

/// Trains every arm on every seed for one condition and load and evaluates them. Rows are
/// ordered by arm, then seed. Throws UsageError for a bad configuration and NumericError when a
/// loss leaves the finite numbers.
std::vector<RunResult> train_and_evaluate(const TaskConfig& config, const TrainOptions& options,
                                          const std::vector<ToyArm>& arms, const std::vector<int64_t>& seeds,
                                          const StepCallback& on_step = nullptr);

/// The result table (lib/SCHEMA.md): keys condition, load, arm, seed; values as in RunResult.
ResultTable to_table(const std::vector<RunResult>& rows);

}  // namespace sg::toy
