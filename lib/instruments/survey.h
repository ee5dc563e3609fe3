// survey.h — the incidence survey of paper App. F (Table 12, Figure 4): per attention head, how
// much mass goes to the sink and whether routing places mass on quiet reads at the rate that
// norm-blind routing would.
//
// Data. N_b blocks of T tokens (consecutive, non-overlapping chunks of the tokenised text, from
// its start), one forward pass each. Per head: attention weights a_ij (query i, key j <= i) and
// read norms r_j = |v_j|/sqrt(d) (v_j the head's value vector, before the output projection).
// Positions are text positions 0..T-1; the first S = 4 (sink_positions) are the sink. For a
// sinkgate model with a sink token, the token is an extra key before position 0; with a phantom
// (off-by-one, sink logit), the phantom is an extra key outside the sequence. Both count as sink.
//
// Which queries. Every statistic below averages over the queries i >= S of every block: those
// are the queries that have a non-sink key to attend to (queries 0..S-1 can only see the sink).
// The pool. For each head, the pool P is every non-sink key (block b, position j >= S) of every
// block: |P| = N_b (T - S) reads, pooled over blocks. "The bottom q percent of the head's read
// norms" (App. F) is taken over this pool, so the threshold is per head and shared by all blocks
// and queries: the k = round(q |P| / 100) reads of smallest r (ties broken by pool order (b, j),
// i.e. a stable sort), the quiet band Q_q. Pooling per head (rather than per block or per query
// row) follows the appendix's wording and keeps the band a property of the head's reads, not of
// which keys one query happens to see; a per-row band would also leave early queries with bands
// of one or two reads.
//
//   sink mass           mean over queries i >= S of (phantom mass + sink-token mass
//                       + sum_{j<S} a_ij): the mass not available to ordinary reads.
//   position0 mass      mean over queries i >= S of a_i0 (App. G's "first key position").
//   zero-option mass    mean over queries i >= S of the phantom or sink-token mass (sinkgate
//                       models with a zero option; gpt-oss, whose learned per-head sink logit is
//                       a phantom: its share 1 - sum_j a_ij).
//   r0 ratio            mean over blocks of r_0 / mean over the pool of r_j (the position-zero read
//                       relative to an ordinary, non-sink read; r_0 is text position 0, also for a
//                       sink-token model).
//   blind-mass ratio@q  with m_bj = sum_i a_ij the mass key (b, j) receives from all queries:
//                       (sum_{Q_q} m / sum_P m) / (k / |P|). The numerator is the fraction of
//                       the non-sink mass that lands in the quiet band; k/|P| is q/100 up to the
//                       rounding of k. 1 in expectation when routing ignores read norms (and the
//                       norms do not trend with position, which decides how much mass a key can
//                       receive under causal masking), 0 when routing avoids quiet reads, at most |P|/k.
//   content share@q     sum_{Q_q} m r / sum_P m r: the share of the effective contribution
//                       a_ij |v_j| (Kobayashi et al. 2020) of non-sink reads that flows through the
//                       quiet band (|v_j| = sqrt(d) r_j; the constant cancels). Not divided by q/100.
// Grouped-query attention: query head h reads the values of its key/value head h / (H / Hkv), so
// r_j is that key/value head's norm; every statistic is per query head. Sliding windows (a layer
// whose query i sees keys j with i - W < j <= i): query i's sink is the first S keys of its window,
// positions start_i .. start_i + S - 1 with start_i = max(0, i - W + 1), which is 0 .. S - 1 while
// i < W (so full attention is the case W >= T); m_bj counts only the queries for which j is not in
// their sink; position0 mass stays the mass on text position 0 (zero for a query past the window).
// Mass sums are ratios of totals (each query's row weighted by its non-sink mass), not means of
// per-row ratios.
//
// Model summary (scope "model", Table 12): sink mass, position0 mass, zero-option mass,
// blind-mass ratios and content shares are the mean over heads; the r0 ratio is the median over
// heads (an even count: the mean of the two middle values). Heads whose value is not finite are
// left out of a summary.
//
// Result table (lib/SCHEMA.md), long form, one value per row:
//   keys   model (name), family (a model_type of families.h, or sinkgate), arm (baseline for
//          pretrained models), attention (mha | gqa, +window, +sinks: PretrainedConfig::attention_kind),
//          params_m (parameters in millions, rounded), layers, heads,
//          scope (head | model), layer, head (-1 on model rows), statistic
//   value  value
// statistic: sink_mass, position0_mass, zero_option_mass (zero-option arms only), r0_ratio,
//            blind_ratio_pQ and content_share_pQ for each percentile Q (p10, p20, p30, p50).
// Table 12:  sg-tabulate FILES --where scope=model --rows model,params_m,layers,heads --cols statistic
//            (pipelines/survey.mk); Figure 4: the scope=head rows.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/hf/language_model.h"
#include "lib/io/results.h"
#include "lib/model/attention.h"

namespace sg {

class GPTImpl;
class PretrainedModel;

struct SurveyOptions {
  int64_t sink_positions = 4;                      // S: the first key positions treated as the sink
  std::vector<int64_t> percentiles{10, 20, 30, 50};  // q of the quiet band, each in (0, 100)
  int64_t batch = 1;                               // blocks per forward pass
  /// Throws UsageError for a percentile outside (0, 100), S < 1 or batch < 1.
  void validate() const;
};

/// One head's statistics (NaN where undefined: e.g. zero_option_mass without a zero option).
struct HeadIncidence {
  int64_t layer = 0, head = 0;
  double sink_mass = 0, position0_mass = 0, zero_option_mass = 0, r0_ratio = 0;
  std::vector<double> blind_ratio, content_share;  // one per SurveyOptions::percentiles
};

/// Accumulates the survey over forward passes, one layer at a time; holds per head the received
/// mass and read norm of every pool key (16 × 1,020 × 2 doubles per head at the paper's size).
/// That storage is allocated once for `expected_blocks` blocks (grown by doubling beyond): small
/// long-lived buffers allocated between the forward passes' large transient ones would fragment
/// the heap, which the tools never return to the system (lib/model/runtime.h, tune_allocator).
class IncidenceAccumulator {
 public:
  IncidenceAccumulator(int64_t layers, int64_t heads, SurveyOptions options, int64_t expected_blocks = 0);

  /// Adds one layer's telemetry of one forward pass over B blocks of T text tokens.
  /// weights (B, H, E+T, E+T) on the real keys, rows summing to 1 - phantom mass;
  /// read_norms (B, H, E+T); phantom_mass (B, H, E+T) or undefined; E = extra_positions
  /// prepended before the text (1 for a sink token, else 0). Throws UsageError on shapes that do
  /// not fit or T <= sink_positions. window > 0: a sliding-window layer whose query i sees keys
  /// j > i - window (the file comment); it must exceed sink_positions, with no sink token.
  void add(int64_t layer, const torch::Tensor& weights, const torch::Tensor& read_norms,
           const torch::Tensor& phantom_mass, int64_t extra_positions = 0, int64_t window = 0);

  /// The statistics of every head (layer-major), as the file comment defines them; a layer that
  /// received nothing gives NaNs. zero_option_mass is NaN unless `zero_option`.
  std::vector<HeadIncidence> finish(bool zero_option) const;

 private:
  struct Layer {
    torch::Tensor received;    // (capacity, H, T-S) float64: m_bj, the first `blocks` rows filled
    torch::Tensor read_norms;  // (capacity, H, T-S) float64: r_bj
    torch::Tensor r0_sum;      // (H) float64
    torch::Tensor sink_sum, position0_sum, zero_sum;  // (H) float64, sums over queries
    int64_t blocks = 0, queries = 0;  // per head
  };
  int64_t heads_;
  int64_t expected_blocks_;
  SurveyOptions options_;
  std::vector<Layer> layers_;
};

/// The statistic names of a survey with these options, in the order rows are written
/// (zero_option_mass included when asked).
std::vector<std::string> statistic_names(const SurveyOptions& options, bool zero_option);

/// Blocks (count, length) int64: the first count consecutive, non-overlapping chunks of `length`
/// ids. Throws InputError naming `source` when there are fewer than count × length ids.
torch::Tensor token_blocks(const std::vector<int32_t>& ids, int64_t count, int64_t length, const std::string& source);

/// The survey of a Hugging Face model on blocks (N_b, T). Throws UsageError when T exceeds the
/// model's context.
std::vector<HeadIncidence> survey_model(const PretrainedModel& model, const torch::Tensor& blocks,
                                        const SurveyOptions& options);

/// The survey of a sinkgate model (any arm) on blocks (N_b, T); phantom and sink-token mass count
/// as sink mass. Installs and then removes telemetry hooks.
std::vector<HeadIncidence> survey_model(GPTImpl& model, const torch::Tensor& blocks, const SurveyOptions& options);

/// The identity of a surveyed model (the key columns of its rows).
struct SurveyedModel {
  std::string name, family, arm;
  std::string attention = "mha";  // PretrainedConfig::attention_kind(): mha, gqa, +window, +sinks
  int64_t parameters = 0, layers = 0, heads = 0;
  bool zero_option = false;  // has a phantom or a sink token: write zero_option_mass
};

/// An empty result table with the survey's columns (file comment).
ResultTable survey_table();

/// Appends the per-head rows and the model-summary rows of one model.
void append_survey(ResultTable& table, const SurveyedModel& model, const std::vector<HeadIncidence>& heads,
                   const SurveyOptions& options);

/// The median of the finite values (NaN when there are none).
double finite_median(std::vector<double> values);
/// The mean of the finite values (NaN when there are none).
double finite_mean(const std::vector<double>& values);

// ---- running the survey on a checkpoint (what sg-survey does for each input) ----

struct SurveyRun {
  SurveyOptions statistics;
  int64_t blocks = 16;
  int64_t block_length = 1024;
  std::string tokenizer;  // "" : the checkpoint folder's own; the one a run file records (LanguageModel)
  std::string name;       // "" : the folder's base name; for a run file tier/arm/seed
  std::string device = "cpu";
  std::string text_source = "text";  // names the text in messages (its path)
};

/// Surveys one checkpoint (a Hugging Face folder, an sg-export folder of any arm, or a sinkgate run
/// file; LanguageModel::load) on `text`: tokenises it with the model's tokenizer (the folder's
/// tokenizer.json or vocab.json + merges.txt; the one a run file records), cuts blocks, measures,
/// and appends the rows to `table`.
/// Throws InputError (unreadable checkpoint, text too short) or UsageError (blocks longer than
/// the context).
void survey_checkpoint(const std::string& path, const std::string& text, const SurveyRun& run, ResultTable& table);

}  // namespace sg
