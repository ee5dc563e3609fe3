// probe.h — what trained gates and sinks do (paper Sections 4.3–4.4, App. C "Gate-override
// probes", App. G; Table 8, Figures 1b, 1c, 5), for one trained model at a time.
//
// Every probe runs on the fixed validation batches of sg-inject (evaluation_batches,
// injection.h: the same --eval-seed, --batches, --batch-size and --context), so every arm and
// seed is measured on the same tokens. Positions are text positions; the sink-token arm's extra
// position is neither a query row nor a read below, and its mass is the arm's zero option.
// "Queries" are the rows i >= S (S = sink_positions, default 1): the queries that can see a key
// other than the first, as in sg-survey (survey.h, whose accumulator the sinks probe reuses).
//
//   overrides    (Table 8; value-slot gate arms) the mean validation loss with the trained gate
//                and with each GateOverride of attention.h (row mean, shuffle within row, reopen),
//                clean (ε = 0) and under junk, one column per junk type × cutoff × dose (default
//                structured, median cutoff, ε = 0.2: the condition Table 8's numbers imply, since
//                its trained-gate increases equal Table 7's median cells, not its q25 ones). The shuffle is seeded by (seed,
//                batch, layer), never by the arm. Statistics loss and loss_increase (over the
//                trained gate at the same ε).
//   sinks        (Section 4.4, Figure 5; every arm) per head: position0_mass = mean over queries of
//                a_i0; phantom_mass (off-by-one, sink logit) or sink_token_mass (sink token) =
//                mean over queries of the zero option's weight; sink_mass = their sum plus the mass
//                on the other sink positions; r0_ratio = mean over sequences of |v_0| / mean of
//                |v_j| over the reads j >= S of every sequence — sg-survey's r0 ratio (a mean, not a
//                median, of the ordinary reads: the same definition and code in both tools).
//   selectivity  (App. G, Figure 1c; arms with a gate) per query row i over its text keys j <= i:
//                mu_i = sum_j a_ij g_j / sum_j a_ij and sigma_i = the same-weighted standard
//                deviation of g_j (the phantom has no gate and is left out of both). Per head:
//                within_row_spread = mean_i sigma_i, between_row_spread = the standard deviation
//                of mu_i over rows, mean_gate = mean_i mu_i, and (zero-option arms) phantom_mass as
//                in sinks (Figure 1b).
// With S = 1 the sinks probe's statistics are sg-survey's with --sink-positions 1 (sg-survey's own
// default, S = 4, follows App. F's pretrained survey); give the same S to compare the two tools.
//   gate-tokens  (App. G "What the filter removes"; arms with a gate) per token id: the mean over
//                its occurrences as a read of g_j averaged over heads (per layer) and over heads
//                and layers (layer all); tokens with at least min_count occurrences, the `top`
//                most attenuated (lowest mean gate) and least attenuated, with their counts.
//   kurtosis     (App. G "Basis-alignment control"; every arm) the excess kurtosis m4/m2² − 3 of
//                each coordinate of a head's reads (before any gate) over the tokens of the
//                batches, averaged over coordinates (per head), heads (per layer) and layers.
//   direction    (Section 7's open limitation; arms with a projection gate, asked by name, not part
//                of "all") how close natural reads come to the head's learned gate direction: the
//                distribution over every read v_j at every text position of the batches of
//                cos(v_j, w_h), and the gate g_j = sigmoid(w_h . v_j + b_h) at those reads
//                (DirectionSummary). Per head, and pooled over the reads of a layer's heads
//                (head all) and of every head (layer all, head all): pooled, not averaged.
// The overrides treat every key of a row alike, the sink token's read included (it has a gate in
// the ZERO+filter arms that combine a sink token with a gate): what is overridden is the gate the
// model applies, wherever it applies it.
// Per-head statistics are averaged over heads for a layer and over all heads for the model
// (layer "all"); the r0 ratio takes the median over heads instead, as sg-survey's summary does.
//
// Memory: the telemetry probes reduce each layer's (B, H, T, T) attention as soon as the layer
// has computed it (TelemetryCallback), so one layer's weights are alive at a time.
//
// Not here: reading run files, the vocabulary and the command line (cmd/sg-probe.cpp).
#pragma once
#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lib/instruments/corruption.h"
#include "lib/io/results.h"
#include "lib/model/attention.h"
#include "lib/run/config.h"
#include "lib/model/model.h"
#include "lib/text/token_file.h"
#include "lib/text/tokenizer.h"

namespace sg {

enum class Probe { overrides, sinks, selectivity, gate_tokens, kurtosis, direction };

/// "overrides", "sinks", "selectivity", "gate-tokens", "kurtosis", "direction".
std::string to_string(Probe probe);
/// The paper's probes, in the order above: what "all" means (direction is asked by name).
const std::vector<Probe>& all_probes();
/// Every probe's name, in the order of the enum (all_probes(), then direction): every --probe
/// list and hint is this one.
std::vector<std::string> probe_names();
/// A comma list of probe names, or "all"; UsageError naming the item (with a did-you-mean) for an
/// unknown or repeated name, or an empty list.
std::vector<Probe> parse_probes(const std::string& list);
/// The arm capabilities (lib/run/arm.h) of which a probe needs one; empty for a probe of every arm.
/// Overrides need a value-slot gate, selectivity and gate-tokens a per-read gate, direction a gate
/// with a learned direction on the reads or the keys; sinks and kurtosis apply to every arm.
std::vector<ArmCapability> probe_needs(Probe probe);
/// Whether a probe measures something in an arm: it has one of probe_needs(probe).
bool probe_applies(Probe probe, const Arm& arm);
/// What a probe needs of an arm, from the arm table: "a per-read gate in the value slot (normgate,
/// …)"; "" for a probe of every arm.
std::string probe_requirement(Probe probe);
/// Every probe's requirement, "; "-joined, and which probes apply to every arm: the hint of a run
/// that no asked probe applies to.
std::string probe_applicability();

// --- the direction probe ---------------------------------------------------------------------

/// UsageError "the direction probe needs … (probe_requirement); arm is X" unless the direction probe
/// applies (the projection gate's w_h on the reads, the key gate's on the keys);
/// `where` (a run file, or empty) is named in the message.
void require_gate_direction(const Arm& arm, const std::string& where = "");

/// What the direction probe measures in one layer: the vectors the gate decides on (B, H, E+T, d),
/// the gate's direction (H, d) and the gate values at those vectors (B, H, E+T).
struct DirectionInput {
  torch::Tensor vectors, direction, gates;
};
/// The direction input of an arm's layer from its telemetry and parameters, the one place that maps
/// an arm to what the direction probe measures: the projection gate's reads v_j (before the gate),
/// or the key gate's keys k_j, with w_h and g_j. Throws require_gate_direction's UsageError otherwise.
DirectionInput direction_input(const Arm& arm, const AttentionTelemetry& telemetry, const ArmParameters& params);

/// The cosine thresholds and histogram of DirectionSummary.
constexpr std::array<double, 3> kDirectionThresholds = {0.5, 0.8, 0.9};
constexpr std::array<double, 9> kDirectionQuantiles = {0, 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99, 1};
constexpr int64_t kDirectionBins = 40;  // bin k: cos in [-1 + k/20, -1 + (k+1)/20); the last bin holds 1

/// The distribution of c_j = cos(x_j, w) over a population of vectors x_j with gate values g_j.
/// The cosine statistics are over the vectors that have a cosine (w != 0 and x_j != 0); with none,
/// they are NaN and `vectors` is 0. mean_gate is over every vector, with a cosine or not.
struct DirectionSummary {
  int64_t vectors = 0;                                   // vectors with a cosine
  std::array<double, kDirectionQuantiles.size()> cos{};  // min, q01, q05, q25, q50, q75, q95, q99, max
                                                         // (linear interpolation between order statistics)
  std::array<double, kDirectionThresholds.size()> share_above{};      // share of c_j > threshold
  std::array<double, kDirectionThresholds.size()> mean_gate_above{};  // mean g_j over c_j > threshold; NaN: none
  double mean_gate = 0;                                  // mean g_j over every vector; NaN: no vector
  std::array<double, kDirectionBins> histogram{};        // share of the vectors with a cosine in each bin
};

/// Cosines and gates collected one layer at a time, summarised per head and pooled.
class DirectionAccumulator {
 public:
  DirectionAccumulator(int64_t layers, int64_t heads);
  /// vectors (B, H, E+T, d), direction (H, d), gates (B, H, E+T); the first E positions are skipped.
  /// Cosines are computed in float64; a head with |w_h| = 0 or a vector of norm 0 gives no cosine.
  void add(int64_t layer, const torch::Tensor& vectors, const torch::Tensor& direction, const torch::Tensor& gates,
           int64_t extra);
  /// One head (layer, head), the pooled reads of a layer's heads (head -1), or of every head
  /// (layer -1, head -1).
  DirectionSummary summary(int64_t layer, int64_t head) const;

 private:
  int64_t heads_;
  struct Head {
    std::vector<double> cos;    // NaN where the vector has no cosine
    std::vector<double> gates;  // one per vector
  };
  std::vector<Head> heads_of_;  // layer-major
};

/// The direction statistics of one batch of vectors: (H) per-head summaries, then the pooled one
/// (H + 1 entries). vectors (B, H, T, d), direction (H, d), gates (B, H, T).
std::vector<DirectionSummary> direction_statistics(const torch::Tensor& vectors, const torch::Tensor& direction,
                                                   const torch::Tensor& gates);

struct ProbeOptions {
  std::vector<Probe> probes = all_probes();
  int64_t batches = 8;
  int64_t batch_size = 8;
  int64_t context = 0;     // 0: min(512, the model's context), as sg-inject
  int64_t eval_seed = -1;  // -1: the run's eval_seed
  int64_t seed = 0;        // the shuffle's permutations and the junk's random choices
  // The corrupted columns of Table 8: every junk × cutoff × dose > 0 (dose 0: the clean column,
  // always measured).
  std::vector<JunkType> junk = {JunkType::structured};
  std::vector<Cutoff> cutoffs = {Cutoff::median};  // Table 8's condition: Table 7's median cell
  std::vector<double> doses = {0.2};
  int64_t sink_positions = 1;  // S
  int64_t min_count = 20;      // gate-tokens: occurrences a token needs to be listed
  int64_t top = 10;            // gate-tokens: tokens listed at each end (0: every qualifying token)
  /// Decodes the gate-tokens' ids (text column); null leaves the text empty.
  const Tokenizer* vocabulary = nullptr;
  torch::Device device = torch::kCPU;
  std::function<void(const std::string&)> progress;
};

/// Checks a run's arm against the probes `options` asks for, before any model loads, by the arm
/// table's capabilities: UsageError when the direction probe is asked of an arm without a gate
/// direction, when no asked probe applies and the run is the only one (`only`), or when the
/// overrides' corrupted column has junk not defined for the arm. `where` (a run file) is named.
void check_probes_apply(const ProbeOptions& options, const Arm& arm, bool only, const std::string& where);

/// One measured value (a row of the result table; "all" / "none" / -1 where a key does not apply).
struct ProbeRow {
  ProbeRow(Probe probe_, std::string statistic_) : probe(probe_), statistic(std::move(statistic_)) {}
  Probe probe;
  std::string statistic;
  std::string override_name = "none", junk = "none", cutoff = "none";
  double dose = 0;
  std::string layer = "all", head = "all";
  std::string end = "none";  // gate-tokens: most-attenuated, least-attenuated, or all (--top 0)
  int64_t rank = -1, token = -1;
  std::string text;
  double value = 0;
};

struct ProbeResult {
  int64_t context = 0;
  int64_t eval_seed = 0;
  std::vector<ProbeRow> rows;
  std::vector<Probe> skipped;  // asked for, but not applicable to the arm
};

/// Per-head selectivity of a gate, accumulated one layer's telemetry at a time.
class SelectivityAccumulator {
 public:
  SelectivityAccumulator(int64_t layers, int64_t heads);
  /// weights (B, H, E+T, E+T) on the real keys, gates (B, H, E+T); E = extra positions before
  /// the text (1 for a sink token), skipped as rows and keys; rows i < E + S are left out, and so
  /// are rows with no mass on the text keys.
  void add(int64_t layer, const torch::Tensor& weights, const torch::Tensor& gates, int64_t extra, int64_t sink_positions);
  struct Head {
    double within_row_spread, between_row_spread, mean_gate;
    int64_t rows;
  };
  /// Layer-major, NaN for a head that received no row.
  std::vector<Head> finish() const;

 private:
  int64_t heads_;
  std::vector<torch::Tensor> sums_;  // per layer (4, H) float64: sum sigma, sum mu, sum mu², rows
};

/// Mean gate per token id, accumulated one layer's telemetry at a time.
class GateTokenAccumulator {
 public:
  GateTokenAccumulator(int64_t layers, int64_t vocab_size);
  /// gates (B, H, E+T), ids (B, T) the tokens read at the text positions.
  void add(int64_t layer, const torch::Tensor& gates, const torch::Tensor& ids, int64_t extra);
  /// Occurrences of each id (as counted at layer 0) (V) int64.
  torch::Tensor counts() const;
  /// The mean over occurrences of the head-averaged gate at `layer`, or (layer -1) the mean over
  /// layers: (V) float64, NaN for ids never seen.
  torch::Tensor mean_gate(int64_t layer) const;

 private:
  std::vector<torch::Tensor> sums_;    // per layer (V) float64: sum over occurrences of mean_h g
  std::vector<torch::Tensor> counts_;  // per layer (V) int64
};

/// Excess kurtosis of every read coordinate over tokens, accumulated one layer at a time, from
/// power sums of (x − K) in float64 with K the coordinate's mean over the first batch (so large
/// means do not cancel the moments away).
class KurtosisAccumulator {
 public:
  explicit KurtosisAccumulator(int64_t layers);
  /// reads (B, H, E+T, d); the first E positions are skipped.
  void add(int64_t layer, const torch::Tensor& reads, int64_t extra);
  /// (H, d) float64 excess kurtosis m4 / m2² − 3 of one layer (NaN where m2 = 0 or nothing seen).
  torch::Tensor excess(int64_t layer) const;

 private:
  struct Layer {
    torch::Tensor shift, s1, s2, s3, s4;  // (H, d) float64
    int64_t count = 0;
  };
  std::vector<Layer> layers_;
};

/// The gate-token listing of one layer (or of the mean over layers): the ids with at least
/// min_count occurrences and a finite mean, ordered by mean gate (ties: by id); with top > 0 the
/// first `top` (most attenuated, rank 1 the lowest) and the last `top` reversed (least attenuated,
/// rank 1 the highest), with top = 0 every such id once (end "all"). Returns (end, rank, id).
struct RankedToken {
  std::string end;
  int64_t rank, id;
};
std::vector<RankedToken> rank_tokens(const torch::Tensor& mean_gate, const torch::Tensor& counts, int64_t min_count,
                                     int64_t top);

/// Runs the probes of options.probes that apply to the arm on `model` (a run's model); the others
/// are listed in result.skipped. Throws UsageError for bad options (see injection.h's for the
/// context), InputError when the validation split is too short for the context. The model gets
/// back its hooks (none), attention path and training mode however the probes leave.
ProbeResult probe_model(GPTImpl& model, const RunConfig& config, const TokenFile& tokens, const ProbeOptions& options);

/// The result table of sg-probe (lib/SCHEMA.md, "sg-probe output"), and one model's rows appended.
ResultTable probe_table();
void append_probe_rows(ResultTable& table, const RunConfig& config, const ProbeResult& result);

}  // namespace sg
