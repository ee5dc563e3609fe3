// stats.h — paired per-seed comparisons of arms (paper Section 4.1, Tables 1 and 2).
//
// Rows of a result table are grouped by every key column except the pairing column (seed), the
// arm column and the `run` identity (each arm's run file differs, by construction); within a group, two arms are compared only on the seeds both have, so that the
// seed noise shared by a pair cancels. An effect is the mean of the per-seed differences with its
// standard error: sample standard deviation / √n, NaN for n = 1 (the paper prints single seeds
// without ±).
//
// Not here: reading/writing tables (results.h), rendering (tabulate.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lib/io/results.h"

namespace sg {

struct MeanSe {
  double mean;  // NaN for no values
  double se;    // NaN for fewer than two values
  int64_t n;
};

/// Mean and standard error (sample standard deviation / √n) of `values`.
MeanSe mean_se(const std::vector<double>& values);

/// What to compare in paired_differences.
struct PairOptions {
  std::string pair = "seed";       // the column whose equal cells make a pair
  std::string by = "arm";          // the column naming the arm
  std::string ref = "baseline";    // the reference arm
  std::string value = "val_loss";  // the numeric column compared
  std::vector<std::string> arms;   // arms to compare with ref (empty: every other arm)
  bool ref_mean = false;           // also a row per group with the reference arm's own mean
};

/// What to decompose (Table 2): improvements over `ref` of the sink arm, the gate arm and the
/// arm with both; overlap = sink + gate − both; filter = both − sink.
struct DecomposeOptions {
  std::string pair = "seed";
  std::string by = "arm";
  std::string ref = "baseline";
  std::string value = "val_loss";
  std::string sink = "sinklogit";
  std::string gate = "normgate";
  std::string both = "combo";
};

/// A computed table and the warnings met on the way (left-out seeds, missing values).
struct StatsResult {
  ResultTable table;
  std::vector<std::string> warnings;
};

/// Paired differences (arm − ref) per group and arm. Output columns: the group keys (as in the
/// input), `statistic` ("paired_diff", or "mean" for the reference's own mean with ref_mean),
/// `ref`, the arm column (named as `by`), then values `mean`, `se`, `n`, `seeds` (the seeds used,
/// "0,1,2") and `unpaired` (seeds present for only one side, left out and warned about).
/// Throws UsageError for an absent column or an arm/reference named nowhere in the input, and
/// InputError for a group without the reference, an arm that shares no seed with it, or two rows
/// for the same group, arm and seed.
StatsResult paired_differences(const ResultTable& input, const PairOptions& options);

/// The Table 2 decomposition per group, each term paired per seed over the seeds its arms share
/// and signed as an improvement (positive = lower value than the reference):
///   sink = ref − sink, gate = ref − gate, both = ref − both           (seeds shared with ref)
///   overlap = (ref − sink) + (ref − gate) − (ref − both)              (seeds shared by all four)
///   filter = sink − both, i.e. both − sink as improvements            (seeds shared by the two)
/// A group without the gate arm gets sink, both and filter only. Output columns: the group keys,
/// `ref`, `sink_arm`, `gate_arm`, `both_arm`, `term` (sink|gate|both|overlap|filter), then `mean`,
/// `se`, `n`, `seeds`, `unpaired`. Throws as paired_differences does (the reference, sink and
/// both arms must be in every group).
StatsResult decompose(const ResultTable& input, const DecomposeOptions& options);

/// Every arm's own mean over the pairing column per group (Table 10: mean ± standard deviation
/// over seeds; no pairing). Output columns: the group keys, `statistic` ("mean"), the arm column,
/// then values `mean`, `sd` (sample standard deviation, NaN for one value), `se` (sd/√n), `n`,
/// `seeds`. Rows whose value is NaN are left out. Throws UsageError for an absent column, and
/// InputError for two rows of the same group, arm and seed.
StatsResult summarize(const ResultTable& input, const PairOptions& options);

}  // namespace sg
