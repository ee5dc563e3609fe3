// probe.cpp — gate overrides, sinks, selectivity, token gates and kurtosis for one model.
#include "lib/instruments/probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>

#include "lib/base/error.h"
#include "lib/base/text.h"
#include "lib/instruments/injection.h"
#include "lib/instruments/survey.h"
#include "lib/model/runtime.h"
#include "lib/text/unicode.h"

namespace sg {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<std::pair<GateOverride, const char*>>& overrides() {
  static const std::vector<std::pair<GateOverride, const char*>> list = {
      {GateOverride::none, "trained"},
      {GateOverride::row_mean, "row-mean"},
      {GateOverride::shuffle, "shuffle"},
      {GateOverride::reopen, "reopen"},
  };
  return list;
}

/// The name of the zero option's mass in the rows: the phantom's, or the sink token's.
std::string zero_option_statistic(const Arm& arm) {
  return arm.zero == ZeroOption::sinktoken ? "sink_token_mass" : "phantom_mass";
}

/// Per-head values (layer-major, one vector of statistics per head) as rows: one per head, one per
/// layer (mean over heads) and one for the model (mean over all heads); statistics whose `median`
/// flag is set take the median over heads instead. Non-finite head values are left out.
void add_head_rows(std::vector<ProbeRow>& rows, Probe probe, int64_t layers, int64_t heads,
                   const std::vector<std::string>& names, const std::vector<std::vector<double>>& values,
                   const std::vector<bool>& median) {
  auto summary = [&](size_t s, int64_t first, int64_t count) {
    std::vector<double> cells;
    for (int64_t i = first; i < first + count; ++i) cells.push_back(values[i][s]);
    return median[s] ? finite_median(cells) : finite_mean(cells);
  };
  for (size_t s = 0; s < names.size(); ++s) {
    for (int64_t l = 0; l < layers; ++l) {
      for (int64_t h = 0; h < heads; ++h) {
        ProbeRow row{probe, names[s]};
        row.layer = std::to_string(l);
        row.head = std::to_string(h);
        row.value = values[l * heads + h][s];
        rows.push_back(row);
      }
      ProbeRow row{probe, names[s]};
      row.layer = std::to_string(l);
      row.value = summary(s, l * heads, heads);
      rows.push_back(row);
    }
    ProbeRow row{probe, names[s]};
    row.value = summary(s, 0, layers * heads);
    rows.push_back(row);
  }
}

/// A token's text for a table cell: spaces as ␣, backslash and control characters escaped (\n,
/// \t, \r, \\, \xNN), invalid UTF-8 replaced; the id column stays the exact identity.
std::string display_text(const std::string& bytes) {
  std::string out;
  for (unsigned char c : replace_invalid_utf8(bytes)) {
    if (c == ' ') out += "\u2423";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20 || c == 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string to_string(Probe probe) {
  switch (probe) {
    case Probe::overrides: return "overrides";
    case Probe::sinks: return "sinks";
    case Probe::selectivity: return "selectivity";
    case Probe::gate_tokens: return "gate-tokens";
    case Probe::kurtosis: return "kurtosis";
    case Probe::direction: return "direction";
  }
  return "?";
}

const std::vector<Probe>& all_probes() {
  static const std::vector<Probe> list = {Probe::overrides, Probe::sinks, Probe::selectivity, Probe::gate_tokens,
                                          Probe::kurtosis};
  return list;
}

namespace {
/// Every probe, in the order of the enum.
std::vector<Probe> known_probes() {
  std::vector<Probe> known = all_probes();
  known.push_back(Probe::direction);
  return known;
}
}  // namespace

std::vector<std::string> probe_names() {
  std::vector<std::string> names;
  for (Probe p : known_probes()) names.push_back(to_string(p));
  return names;
}

std::vector<Probe> parse_probes(const std::string& list) {
  if (trim(list) == "all") return all_probes();
  const std::vector<Probe> known = known_probes();
  const std::vector<std::string> names = probe_names();
  std::vector<Probe> out;
  const auto items = split_list(list);
  if (items.empty()) throw UsageError("--probe is empty", "name probes: " + join(names, ", ") + ", or all");
  for (const auto& item : items) {
    const auto it = std::find(names.begin(), names.end(), item);
    if (it == names.end())
      throw UsageError("--probe: unknown probe '" + item + "'",
                       did_you_mean(item, names) + "the probes are " + join(names, ", ") + ", or all");
    const Probe probe = known[it - names.begin()];
    if (std::find(out.begin(), out.end(), probe) != out.end())
      throw UsageError("--probe: '" + item + "' is given twice");
    out.push_back(probe);
  }
  return out;
}

std::vector<ArmCapability> probe_needs(Probe probe) {
  switch (probe) {
    case Probe::overrides: return {ArmCapability::value_slot_gate};
    case Probe::selectivity:
    case Probe::gate_tokens: return {ArmCapability::read_gate};
    case Probe::direction: return {ArmCapability::read_direction, ArmCapability::key_direction};
    case Probe::sinks:
    case Probe::kurtosis: return {};
  }
  return {};
}

bool probe_applies(Probe probe, const Arm& arm) {
  const auto needs = probe_needs(probe);
  return needs.empty() || std::any_of(needs.begin(), needs.end(), [&](ArmCapability c) { return arm_has(arm, c); });
}

std::string probe_requirement(Probe probe) {
  std::vector<std::string> options;
  for (const auto capability : probe_needs(probe)) options.push_back(arms_with(capability));
  return join(options, " or ");
}

std::string probe_applicability() {
  std::vector<std::string> parts, everywhere;
  for (const auto probe : {Probe::overrides, Probe::sinks, Probe::selectivity, Probe::gate_tokens, Probe::kurtosis,
                           Probe::direction}) {
    const auto requirement = probe_requirement(probe);
    if (requirement.empty()) everywhere.push_back(to_string(probe));
    else parts.push_back("the " + to_string(probe) + " probe needs " + requirement);
  }
  return join(parts, "; ") + "; " + join(everywhere, " and ") + " apply to every arm";
}

void check_probes_apply(const ProbeOptions& options, const Arm& arm, bool only, const std::string& where) {
  const auto asked = [&](Probe probe) {
    return std::find(options.probes.begin(), options.probes.end(), probe) != options.probes.end();
  };
  if (asked(Probe::direction)) require_gate_direction(arm, where);
  const bool any = std::any_of(options.probes.begin(), options.probes.end(), [&](Probe p) { return probe_applies(p, arm); });
  if (!any && only)
    throw UsageError("none of the probes asked for applies to arm " + arm.name() + " (" + where + ")", probe_applicability());
  const bool any_junk = std::any_of(options.doses.begin(), options.doses.end(), [](double dose) { return dose > 0; });
  if (asked(Probe::overrides) && probe_applies(Probe::overrides, arm) && any_junk)
    for (const auto junk : options.junk)
      if (const auto why = junk_not_defined(junk, arm); !why.empty()) throw UsageError(why + " (" + where + ")");
}

// --- the direction probe ---------------------------------------------------------------------

void require_gate_direction(const Arm& arm, const std::string& where) {
  if (probe_applies(Probe::direction, arm)) return;
  throw UsageError("the direction probe needs " + probe_requirement(Probe::direction) + "; arm is " + arm.name() +
                       (where.empty() ? "" : " (" + where + ")"),
                   "probe only runs of arms with a projection or key gate with --probe direction");
}

DirectionInput direction_input(const Arm& arm, const AttentionTelemetry& telemetry, const ArmParameters& params) {
  require_gate_direction(arm);
  switch (arm.filter) {
    case Filter::projgate: return {telemetry.reads, params.gate_w, telemetry.gates};  // g_j = sigmoid(w_h . v_j + b_h)
    case Filter::keygate: return {telemetry.keys, params.gate_w, telemetry.gates};    // sigmoid(w_h . k_j / sqrt(d) + b_h)
    default: break;
  }
  throw UsageError("the direction probe has no input for arm " + arm.name());  // has_gate_direction disagrees
}

namespace {

/// The summary of one population: cos (NaN where a vector has no cosine) and gates, one per vector.
DirectionSummary summarise_direction(const std::vector<double>& cos, const std::vector<double>& gates) {
  DirectionSummary out;
  std::vector<double> sorted;
  sorted.reserve(cos.size());
  for (const double c : cos)
    if (!std::isnan(c)) sorted.push_back(c);
  std::sort(sorted.begin(), sorted.end());
  const auto n = static_cast<int64_t>(sorted.size());
  out.vectors = n;
  out.mean_gate = gates.empty() ? kNaN : std::accumulate(gates.begin(), gates.end(), 0.0) / gates.size();
  for (size_t q = 0; q < kDirectionQuantiles.size(); ++q) {
    if (n == 0) {
      out.cos[q] = kNaN;
      continue;
    }
    // Linear interpolation between order statistics (Hyndman and Fan's type 7, numpy's default).
    const double h = kDirectionQuantiles[q] * static_cast<double>(n - 1);
    const auto low = static_cast<int64_t>(std::floor(h));
    const int64_t high = std::min(low + 1, n - 1);
    out.cos[q] = sorted[low] + (h - static_cast<double>(low)) * (sorted[high] - sorted[low]);
  }
  std::array<int64_t, kDirectionThresholds.size()> above{};
  std::array<double, kDirectionThresholds.size()> gate_sums{};
  std::array<int64_t, kDirectionBins> bins{};
  for (size_t j = 0; j < cos.size(); ++j) {
    const double c = cos[j];
    if (std::isnan(c)) continue;
    for (size_t t = 0; t < kDirectionThresholds.size(); ++t)
      if (c > kDirectionThresholds[t]) ++above[t], gate_sums[t] += gates[j];
    const auto bin = static_cast<int64_t>(std::floor((c + 1.0) * (kDirectionBins / 2)));
    ++bins[std::clamp<int64_t>(bin, 0, kDirectionBins - 1)];
  }
  for (size_t t = 0; t < kDirectionThresholds.size(); ++t) {
    out.share_above[t] = n > 0 ? static_cast<double>(above[t]) / n : kNaN;
    out.mean_gate_above[t] = above[t] > 0 ? gate_sums[t] / above[t] : kNaN;
  }
  for (int64_t k = 0; k < kDirectionBins; ++k) out.histogram[k] = n > 0 ? static_cast<double>(bins[k]) / n : kNaN;
  return out;
}

}  // namespace

DirectionAccumulator::DirectionAccumulator(int64_t layers, int64_t heads)
    : heads_(heads), heads_of_(static_cast<size_t>(layers * heads)) {}

void DirectionAccumulator::add(int64_t layer, const torch::Tensor& vectors, const torch::Tensor& direction,
                               const torch::Tensor& gates, int64_t extra) {
  if (layer < 0 || (layer + 1) * heads_ > static_cast<int64_t>(heads_of_.size()) || vectors.dim() != 4 ||
      vectors.size(1) != heads_)
    throw UsageError("direction: layer " + std::to_string(layer) + " or its heads do not fit the accumulator");
  const int64_t text = vectors.size(2) - extra, d = vectors.size(3);
  if (direction.dim() != 2 || direction.size(0) != heads_ || direction.size(1) != d || gates.dim() != 3 ||
      gates.size(0) != vectors.size(0) || gates.size(1) != heads_ || gates.size(2) != vectors.size(2))
    throw UsageError("direction: the direction (H, d) and gates (B, H, T) do not fit the vectors (B, H, T, d)");
  const auto x = vectors.narrow(2, extra, text).to(torch::kCPU, torch::kDouble);  // (B, H, T, d)
  const auto w = direction.to(torch::kCPU, torch::kDouble);                       // (H, d)
  const auto g = gates.narrow(2, extra, text).to(torch::kCPU, torch::kDouble);    // (B, H, T)
  const auto dot = (x * w.unsqueeze(0).unsqueeze(2)).sum(-1);                     // (B, H, T)
  const auto norms = x.norm(2, -1) * w.norm(2, -1).unsqueeze(0).unsqueeze(2);     // (B, H, T)
  const auto cos = torch::where(norms > 0, (dot / norms).clamp(-1.0, 1.0), torch::full_like(dot, kNaN));
  for (int64_t h = 0; h < heads_; ++h) {
    auto& head = heads_of_[layer * heads_ + h];
    const auto c = cos.select(1, h).contiguous();  // (B, T)
    const auto gh = g.select(1, h).contiguous();
    head.cos.insert(head.cos.end(), c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    head.gates.insert(head.gates.end(), gh.data_ptr<double>(), gh.data_ptr<double>() + gh.numel());
  }
}

DirectionSummary DirectionAccumulator::summary(int64_t layer, int64_t head) const {
  const auto layers = static_cast<int64_t>(heads_of_.size()) / heads_;
  if (layer < -1 || layer >= layers || head < -1 || head >= heads_ || (layer == -1 && head != -1))
    throw UsageError("direction: no summary for layer " + std::to_string(layer) + ", head " + std::to_string(head));
  if (head >= 0) {
    const auto& one = heads_of_[layer * heads_ + head];
    return summarise_direction(one.cos, one.gates);
  }
  std::vector<double> cos, gates;
  const int64_t first = layer >= 0 ? layer : 0, last = layer >= 0 ? layer + 1 : layers;
  for (int64_t l = first; l < last; ++l)
    for (int64_t h = 0; h < heads_; ++h) {
      const auto& one = heads_of_[l * heads_ + h];
      cos.insert(cos.end(), one.cos.begin(), one.cos.end());
      gates.insert(gates.end(), one.gates.begin(), one.gates.end());
    }
  return summarise_direction(cos, gates);
}

std::vector<DirectionSummary> direction_statistics(const torch::Tensor& vectors, const torch::Tensor& direction,
                                                   const torch::Tensor& gates) {
  if (vectors.dim() != 4) throw UsageError("direction: the vectors must be (B, H, T, d)");
  DirectionAccumulator accumulator(1, vectors.size(1));
  accumulator.add(0, vectors, direction, gates, /*extra=*/0);
  std::vector<DirectionSummary> out;
  for (int64_t h = 0; h < vectors.size(1); ++h) out.push_back(accumulator.summary(0, h));
  out.push_back(accumulator.summary(0, -1));
  return out;
}

// --- accumulators ----------------------------------------------------------------------------

SelectivityAccumulator::SelectivityAccumulator(int64_t layers, int64_t heads) : heads_(heads) {
  for (int64_t l = 0; l < layers; ++l) sums_.push_back(torch::zeros({4, heads}, torch::kDouble));
}

void SelectivityAccumulator::add(int64_t layer, const torch::Tensor& weights, const torch::Tensor& gates,
                                 int64_t extra, int64_t sink_positions) {
  const int64_t text = weights.size(-1) - extra, rows = text - sink_positions;
  if (layer < 0 || layer >= static_cast<int64_t>(sums_.size()) || weights.size(1) != heads_)
    throw UsageError("selectivity: layer " + std::to_string(layer) + " or its heads do not fit the accumulator");
  if (rows < 1) throw UsageError("selectivity: sequences of " + std::to_string(text) + " tokens leave no query row");
  const auto w_all = weights.narrow(2, extra + sink_positions, rows).narrow(3, extra, text);  // (B, H, R, T)
  const auto g_all = gates.narrow(2, extra, text);                                              // (B, H, T)
  auto& sums = sums_[layer];
  // One sequence at a time: a (H, R, T) float64 product is alive, not (B, H, R, T).
  for (int64_t b = 0; b < weights.size(0); ++b) {
    const auto w = w_all[b].to(torch::kDouble);               // (H, R, T)
    const auto g = g_all[b].to(torch::kDouble).unsqueeze(1);  // (H, 1, T)
    const auto mass = w.sum(-1);                              // (H, R)
    const auto valid = mass > 0;
    const auto safe = torch::where(valid, mass, torch::ones_like(mass));
    const auto mu = (w * g).sum(-1) / safe;
    const auto var = (w * (g - mu.unsqueeze(-1)).pow(2)).sum(-1) / safe;
    const auto keep = valid.to(torch::kDouble);
    const auto sigma = var.clamp_min(0).sqrt();
    sums[0] += (sigma * keep).sum(-1).cpu();
    sums[1] += (mu * keep).sum(-1).cpu();
    sums[2] += (mu * mu * keep).sum(-1).cpu();
    sums[3] += keep.sum(-1).cpu();
  }
}

std::vector<SelectivityAccumulator::Head> SelectivityAccumulator::finish() const {
  std::vector<Head> out;
  for (const auto& sums : sums_) {
    for (int64_t h = 0; h < heads_; ++h) {
      const double n = sums[3][h].item<double>();
      if (n <= 0) {
        out.push_back({kNaN, kNaN, kNaN, 0});
        continue;
      }
      const double mean = sums[1][h].item<double>() / n;
      const double between = std::sqrt(std::max(0.0, sums[2][h].item<double>() / n - mean * mean));
      out.push_back({sums[0][h].item<double>() / n, between, mean, static_cast<int64_t>(n)});
    }
  }
  return out;
}

GateTokenAccumulator::GateTokenAccumulator(int64_t layers, int64_t vocab_size) {
  for (int64_t l = 0; l < layers; ++l) {
    sums_.push_back(torch::zeros({vocab_size}, torch::kDouble));
    counts_.push_back(torch::zeros({vocab_size}, torch::kInt64));
  }
}

void GateTokenAccumulator::add(int64_t layer, const torch::Tensor& gates, const torch::Tensor& ids, int64_t extra) {
  if (layer < 0 || layer >= static_cast<int64_t>(sums_.size()))
    throw UsageError("gate-tokens: layer " + std::to_string(layer) + " outside the accumulator");
  const int64_t text = gates.size(-1) - extra;
  if (ids.dim() != 2 || ids.size(0) != gates.size(0) || ids.size(1) != text)
    throw UsageError("gate-tokens: ids do not match the gates' batch and positions");
  const auto flat = ids.reshape({-1}).to(torch::kCPU, torch::kInt64);
  const int64_t vocab = sums_[layer].size(0);
  if (flat.numel() > 0 && (flat.min().item<int64_t>() < 0 || flat.max().item<int64_t>() >= vocab))
    throw UsageError("gate-tokens: a token id is outside the vocabulary of " + std::to_string(vocab));
  const auto per_read = gates.narrow(2, extra, text).to(torch::kDouble).mean(1).reshape({-1}).cpu();  // (B*T)
  sums_[layer].index_add_(0, flat, per_read);
  counts_[layer].index_add_(0, flat, torch::ones_like(flat));
}

torch::Tensor GateTokenAccumulator::counts() const { return counts_.at(0); }

torch::Tensor GateTokenAccumulator::mean_gate(int64_t layer) const {
  auto mean_of = [&](size_t l) {
    const auto n = counts_[l].to(torch::kDouble);
    return torch::where(n > 0, sums_[l] / n.clamp_min(1), torch::full_like(n, kNaN));
  };
  if (layer >= 0) return mean_of(static_cast<size_t>(layer));
  auto total = torch::zeros_like(sums_.at(0));
  for (size_t l = 0; l < sums_.size(); ++l) total += mean_of(l);
  return total / static_cast<double>(sums_.size());
}

KurtosisAccumulator::KurtosisAccumulator(int64_t layers) : layers_(static_cast<size_t>(layers)) {}

void KurtosisAccumulator::add(int64_t layer, const torch::Tensor& reads, int64_t extra) {
  if (layer < 0 || layer >= static_cast<int64_t>(layers_.size()))
    throw UsageError("kurtosis: layer " + std::to_string(layer) + " outside the accumulator");
  auto& slot = layers_[layer];
  const int64_t text = reads.size(2) - extra;
  const auto x = reads.narrow(2, extra, text).to(torch::kDouble);  // (B, H, T, d)
  const std::vector<int64_t> tokens{0, 2};
  if (slot.count == 0) {
    slot.shift = x.mean(tokens);  // (H, d)
    slot.s1 = torch::zeros_like(slot.shift);
    slot.s2 = torch::zeros_like(slot.shift);
    slot.s3 = torch::zeros_like(slot.shift);
    slot.s4 = torch::zeros_like(slot.shift);
  }
  const auto y = x - slot.shift.unsqueeze(0).unsqueeze(2);
  const auto y2 = y * y;
  slot.s1 += y.sum(tokens);
  slot.s2 += y2.sum(tokens);
  slot.s3 += (y2 * y).sum(tokens);
  slot.s4 += (y2 * y2).sum(tokens);
  slot.count += x.size(0) * text;
}

torch::Tensor KurtosisAccumulator::excess(int64_t layer) const {
  const auto& slot = layers_.at(layer);
  if (slot.count == 0) return {};
  const double n = static_cast<double>(slot.count);
  const auto a1 = slot.s1 / n, a2 = slot.s2 / n, a3 = slot.s3 / n, a4 = slot.s4 / n;
  const auto m2 = a2 - a1 * a1;
  const auto m4 = a4 - 4 * a1 * a3 + 6 * a1 * a1 * a2 - 3 * a1.pow(4);
  return torch::where(m2 > 0, m4 / (m2 * m2) - 3, torch::full_like(m2, kNaN)).cpu();
}

std::vector<RankedToken> rank_tokens(const torch::Tensor& mean_gate, const torch::Tensor& counts, int64_t min_count,
                                     int64_t top) {
  const auto means = mean_gate.to(torch::kCPU, torch::kDouble).contiguous();
  const auto n = counts.to(torch::kCPU, torch::kInt64).contiguous();
  const auto* mean = means.data_ptr<double>();
  const auto* count = n.data_ptr<int64_t>();
  std::vector<int64_t> ids;
  for (int64_t id = 0; id < n.size(0) && id < means.size(0); ++id)
    if (count[id] >= min_count && std::isfinite(mean[id])) ids.push_back(id);
  std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return mean[a] < mean[b]; });
  std::vector<RankedToken> out;
  const auto listed = static_cast<int64_t>(ids.size());
  if (top == 0) {
    for (int64_t r = 0; r < listed; ++r) out.push_back({"all", r + 1, ids[r]});
    return out;
  }
  for (int64_t r = 0; r < std::min(top, listed); ++r) out.push_back({"most-attenuated", r + 1, ids[r]});
  for (int64_t r = 0; r < std::min(top, listed); ++r) out.push_back({"least-attenuated", r + 1, ids[listed - 1 - r]});
  return out;
}

// --- the probes ------------------------------------------------------------------------------

namespace {

/// Whether `probe` is among the options' probes and applies to the arm.
bool asked(const ProbeOptions& options, const Arm& arm, Probe probe) {
  return std::find(options.probes.begin(), options.probes.end(), probe) != options.probes.end() &&
         probe_applies(probe, arm);
}

/// What every probe of one model shares: the arm's shape, the fixed batches, the options, the
/// rows so far and the progress of the passes.
struct ProbeRun {
  GPTImpl& model;
  const Arm& arm;
  const ProbeOptions& options;
  const std::vector<Batch>& batches;
  int64_t layers, heads, vocab_size;
  int64_t extra;  // positions before the text: 1 for a sink token
  bool zero_option;
  ProbeResult& result;
  PassProgress& progress;
  bool asked(Probe p) const { return sg::asked(options, arm, p); }
};

/// The accumulators of the telemetry probes, filled in one clean pass over the batches.
struct Telemetry {
  Telemetry(const ProbeRun& run, const SurveyOptions& survey)
      : incidence(run.layers, run.heads, survey, run.options.batches * run.options.batch_size),
        selectivity(run.layers, run.heads),
        gate_tokens(run.asked(Probe::gate_tokens) ? run.layers : 0, run.vocab_size),
        kurtosis(run.layers),
        direction(run.layers, run.heads) {}
  IncidenceAccumulator incidence;
  SelectivityAccumulator selectivity;
  GateTokenAccumulator gate_tokens;
  KurtosisAccumulator kurtosis;
  DirectionAccumulator direction;
  std::vector<HeadIncidence> incidence_heads;  // incidence.finish(), where sinks or selectivity need it
  // The output gate per (layer, head), over the text's query positions: the sum of its value (the
  // mean over the head's dimensions, element-wise), of the rows it closes below kClosedGate, and rows.
  torch::Tensor output_gate_sum, output_gate_closed, output_gate_rows;
};

/// An output-gate value below this closes the head for that query: its output is cut by 10x or more.
constexpr double kClosedGate = 0.1;

void sink_rows(const ProbeRun& run, const Telemetry& telemetry) {
  std::vector<std::string> names{"position0_mass"};
  if (run.zero_option) names.push_back(zero_option_statistic(run.arm));
  names.insert(names.end(), {"sink_mass", "r0_ratio"});
  std::vector<bool> median(names.size(), false);
  median.back() = true;  // r0_ratio: the median over heads, as sg-survey
  // The output gate's abstention: its mean value and the share of query rows it closes, per head.
  const bool output_gate = run.arm.has_output_gate();
  torch::Tensor gate_mean, gate_closed;  // (L * H), layer-major as incidence_heads
  if (output_gate) {
    names.insert(names.end(), {"output_gate_mean", "output_gate_closed"});
    median.insert(median.end(), {false, false});
    gate_mean = (telemetry.output_gate_sum / telemetry.output_gate_rows).reshape({-1});
    gate_closed = (telemetry.output_gate_closed / telemetry.output_gate_rows).reshape({-1});
  }
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < telemetry.incidence_heads.size(); ++i) {
    const auto& h = telemetry.incidence_heads[i];
    std::vector<double> v{h.position0_mass};
    if (run.zero_option) v.push_back(h.zero_option_mass);
    v.insert(v.end(), {h.sink_mass, h.r0_ratio});
    if (output_gate)
      v.insert(v.end(), {gate_mean[static_cast<int64_t>(i)].item<double>(), gate_closed[static_cast<int64_t>(i)].item<double>()});
    values.push_back(v);
  }
  add_head_rows(run.result.rows, Probe::sinks, run.layers, run.heads, names, values, median);
}

void selectivity_rows(const ProbeRun& run, const Telemetry& telemetry) {
  std::vector<std::string> names{"within_row_spread", "between_row_spread", "mean_gate"};
  if (run.zero_option) names.push_back(zero_option_statistic(run.arm));
  const auto spread = telemetry.selectivity.finish();
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < spread.size(); ++i) {
    std::vector<double> v{spread[i].within_row_spread, spread[i].between_row_spread, spread[i].mean_gate};
    if (run.zero_option) v.push_back(telemetry.incidence_heads[i].zero_option_mass);
    values.push_back(v);
  }
  add_head_rows(run.result.rows, Probe::selectivity, run.layers, run.heads, names, values,
                std::vector<bool>(names.size(), false));
}

void kurtosis_rows(const ProbeRun& run, const Telemetry& telemetry) {
  std::vector<std::vector<double>> values;
  for (int64_t l = 0; l < run.layers; ++l) {
    const auto excess = telemetry.kurtosis.excess(l);  // (H, d); undefined when the layer saw nothing
    for (int64_t h = 0; h < run.heads; ++h)
      values.push_back({excess.defined() ? excess[h].nanmean().item<double>() : kNaN});
  }
  add_head_rows(run.result.rows, Probe::kurtosis, run.layers, run.heads, {"excess_kurtosis"}, values, {false});
}

void gate_token_rows(const ProbeRun& run, const Telemetry& telemetry) {
  const auto counts = telemetry.gate_tokens.counts();
  for (int64_t l = -1; l < run.layers; ++l) {
    const auto means = telemetry.gate_tokens.mean_gate(l);
    for (const auto& ranked : rank_tokens(means, counts, run.options.min_count, run.options.top)) {
      ProbeRow row{Probe::gate_tokens, "mean_gate"};
      if (l >= 0) row.layer = std::to_string(l);
      row.end = ranked.end;
      row.rank = ranked.rank;
      row.token = ranked.id;
      if (run.options.vocabulary) {
        try {
          row.text = display_text(run.options.vocabulary->decode({static_cast<int32_t>(ranked.id)}));
        } catch (const InputError&) {
          row.text = "";
        }
      }
      row.value = means[ranked.id].item<double>();
      run.result.rows.push_back(row);
      row.statistic = "occurrences";
      row.value = static_cast<double>(counts[ranked.id].item<int64_t>());
      run.result.rows.push_back(row);
    }
  }
}

/// The statistic names of a DirectionSummary, in the order direction_values gives them.
std::vector<std::string> direction_names() {
  static const char* quantile_names[] = {"min", "q01", "q05", "q25", "q50", "q75", "q95", "q99", "max"};
  std::vector<std::string> names;
  for (const char* q : quantile_names) names.push_back(std::string("cos_") + q);
  for (const double t : kDirectionThresholds) names.push_back("share_cos_above_" + format_exact(t));
  for (const double t : kDirectionThresholds) names.push_back("mean_gate_cos_above_" + format_exact(t));
  names.push_back("mean_gate");
  names.push_back("reads");
  for (int64_t k = 0; k < kDirectionBins; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "cos_hist_%02lld", static_cast<long long>(k));
    names.push_back(name);
  }
  return names;
}

std::vector<double> direction_values(const DirectionSummary& s) {
  std::vector<double> values(s.cos.begin(), s.cos.end());
  values.insert(values.end(), s.share_above.begin(), s.share_above.end());
  values.insert(values.end(), s.mean_gate_above.begin(), s.mean_gate_above.end());
  values.push_back(s.mean_gate);
  values.push_back(static_cast<double>(s.vectors));
  values.insert(values.end(), s.histogram.begin(), s.histogram.end());
  return values;
}

/// Per head, per layer (head all: the layer's heads pooled) and for the model (every head pooled).
void direction_rows(const ProbeRun& run, const Telemetry& telemetry) {
  const auto names = direction_names();
  auto add = [&](int64_t layer, int64_t head) {
    const auto values = direction_values(telemetry.direction.summary(layer, head));
    for (size_t s = 0; s < names.size(); ++s) {
      ProbeRow row{Probe::direction, names[s]};
      if (layer >= 0) row.layer = std::to_string(layer);
      if (head >= 0) row.head = std::to_string(head);
      row.value = values[s];
      run.result.rows.push_back(row);
    }
  };
  for (int64_t l = 0; l < run.layers; ++l) {
    for (int64_t h = 0; h < run.heads; ++h) add(l, h);
    add(l, -1);
  }
  add(-1, -1);
}

/// sinks, selectivity, gate-tokens, kurtosis and direction: one clean pass with telemetry, then each probe's rows.
void telemetry_probes(ProbeRun& run) {
  SurveyOptions survey;
  survey.sink_positions = run.options.sink_positions;
  survey.percentiles = {50};
  const bool want_incidence = run.asked(Probe::sinks) || (run.asked(Probe::selectivity) && run.zero_option);
  Telemetry telemetry(run, survey);
  const bool sinks = run.asked(Probe::sinks), selectivity = run.asked(Probe::selectivity),
             gate_tokens = run.asked(Probe::gate_tokens), kurtosis = run.asked(Probe::kurtosis),
             direction = run.asked(Probe::direction);
  std::vector<ArmParameters> parameters;  // per layer, for the direction's w_h
  if (direction)
    for (const auto& block : *run.model.blocks) parameters.push_back(block->as<Block>()->attn->arm_parameters());
  size_t current = 0;
  auto hooks = std::make_shared<AttentionHooks>();
  const bool output_gate = sinks && run.arm.has_output_gate();
  if (output_gate) {
    const auto zeros = [&] { return torch::zeros({run.layers, run.heads}, torch::kDouble); };
    telemetry.output_gate_sum = zeros();
    telemetry.output_gate_closed = zeros();
    telemetry.output_gate_rows = zeros();
  }
  hooks->telemetry = [&](int64_t layer, const AttentionTelemetry& t) {
    if (want_incidence) telemetry.incidence.add(layer, t.weights, t.read_norms, t.phantom_mass, run.extra);
    if (output_gate) {
      // (B, H, Tq, 1 or d) -> the head's gate per query row of the text (the sink token's row left out).
      const auto gate = t.output_gates.to(torch::kDouble).mean(-1).narrow(2, run.extra, t.output_gates.size(2) - run.extra);
      telemetry.output_gate_sum[layer] += gate.sum(std::vector<int64_t>{0, 2}).cpu();
      telemetry.output_gate_closed[layer] += (gate < kClosedGate).sum(std::vector<int64_t>{0, 2}).to(torch::kDouble).cpu();
      telemetry.output_gate_rows[layer] += static_cast<double>(gate.size(0) * gate.size(2));
    }
    if (selectivity) telemetry.selectivity.add(layer, t.weights, t.gates, run.extra, run.options.sink_positions);
    if (gate_tokens) telemetry.gate_tokens.add(layer, t.gates, run.batches[current].inputs, run.extra);
    if (kurtosis) telemetry.kurtosis.add(layer, t.reads, run.extra);
    if (direction) {
      const auto input = direction_input(run.arm, t, parameters.at(layer));
      telemetry.direction.add(layer, input.vectors, input.direction, input.gates, run.extra);
    }
  };
  run.model.set_hooks(hooks);
  for (current = 0; current < run.batches.size(); ++current) run.model.hidden(run.batches[current].inputs);
  run.model.set_hooks(nullptr);
  if (want_incidence) telemetry.incidence_heads = telemetry.incidence.finish(run.zero_option);
  if (sinks) sink_rows(run, telemetry);
  if (selectivity) selectivity_rows(run, telemetry);
  if (kurtosis) kurtosis_rows(run, telemetry);
  if (gate_tokens) gate_token_rows(run, telemetry);
  if (direction) direction_rows(run, telemetry);
  run.progress.report("telemetry (" + std::to_string(run.batches.size()) + " batches)");
}

/// One column of Table 8: clean (spec null) or under one junk condition.
struct OverrideColumn {
  std::optional<CorruptionSpec> junk;
};

/// The mean loss over the batches with the gate overridden by `how`, clean or under `column`'s junk.
double override_loss(ProbeRun& run, GateOverride how, const OverrideColumn& column,
                     const std::vector<torch::Tensor>& directions) {
  std::unique_ptr<Corruptor> corruptor;
  if (column.junk)
    corruptor = std::make_unique<Corruptor>(*column.junk, along_gate_direction(column.junk->junk)
                                                              ? directions
                                                              : std::vector<torch::Tensor>{});
  double total = 0;
  for (size_t k = 0; k < run.batches.size(); ++k) {
    AttentionHooks base;
    base.gate_override = how;
    // The shuffle's permutations: keyed by (seed, batch) here and the layer in attend().
    base.override_seed =
        static_cast<int64_t>(static_cast<uint64_t>(run.options.seed) * 1000003u + static_cast<uint64_t>(k));
    if (corruptor) {
      corruptor->set_batch(static_cast<int64_t>(k));
      run.model.set_hooks(corruptor->hooks(base));
    } else {
      run.model.set_hooks(base.active() ? std::make_shared<AttentionHooks>(base) : nullptr);
    }
    total += run.model.loss(run.batches[k].inputs, run.batches[k].targets).item<double>();
  }
  run.model.set_hooks(nullptr);
  return total / static_cast<double>(run.batches.size());
}

/// Table 8: every override in the clean column and in each corrupted one (junk × cutoff × dose).
void override_probe(ProbeRun& run, const std::vector<OverrideColumn>& columns,
                    const std::vector<torch::Tensor>& directions) {
  // Every override needs the explicit attention matrix; the trained gate is scored on the same
  // path, so that loss_increase holds no difference between kernels (e.g. under bf16).
  run.model.set_backend(AttentionBackend::explicit_math);
  for (const auto& column : columns) {
    double trained = kNaN;
    for (const auto& [how, name] : overrides()) {
      const double loss = override_loss(run, how, column, directions);
      if (how == GateOverride::none) trained = loss;
      for (const char* statistic : {"loss", "loss_increase"}) {
        ProbeRow row{Probe::overrides, statistic};
        row.override_name = name;
        if (column.junk) {
          row.junk = to_string(column.junk->junk);
          row.cutoff = to_string(column.junk->cutoff);
          row.dose = column.junk->dose;
        }
        row.value = std::string(statistic) == "loss" ? loss : loss - trained;
        run.result.rows.push_back(row);
      }
      std::ostringstream line;
      line << "overrides " << name;
      if (column.junk)
        line << " " << to_string(column.junk->junk) << " " << to_string(column.junk->cutoff) << " dose "
             << column.junk->dose;
      else
        line << " clean";
      line << ": loss " << std::fixed << std::setprecision(4) << loss;
      run.progress.report(line.str());
    }
  }
}

}  // namespace

ProbeResult probe_model(GPTImpl& model, const RunConfig& config, const TokenFile& tokens, const ProbeOptions& options) {
  if (options.batches < 1) throw UsageError("--batches must be at least 1");
  if (options.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  if (options.junk.empty() || options.cutoffs.empty() || options.doses.empty())
    throw UsageError("--junk, --cutoff and --dose need at least one item each");
  for (const double dose : options.doses)
    if (!(dose >= 0) || !std::isfinite(dose))
      throw UsageError("--dose must be a finite number >= 0, not " + format_exact(dose));
  if (options.sink_positions < 1) throw UsageError("--sink-positions must be at least 1");
  if (options.min_count < 1) throw UsageError("--min-count must be at least 1");
  if (options.top < 0) throw UsageError("--top must be 0 (every token) or more");
  const ModelConfig& m = config.model;
  const Arm& arm = m.arm;
  ProbeResult result;
  InjectionOptions context_options;
  context_options.context = options.context;
  result.context = injection_context(context_options, m);
  result.eval_seed = options.eval_seed >= 0 ? options.eval_seed : config.train.eval_seed;
  if (result.context <= options.sink_positions)
    throw UsageError("--context " + std::to_string(result.context) + " leaves no query after the " +
                     std::to_string(options.sink_positions) + " sink position(s)");
  // The direction probe is asked by name only: an arm without a gate direction is a usage error.
  if (std::find(options.probes.begin(), options.probes.end(), Probe::direction) != options.probes.end())
    require_gate_direction(arm);
  for (Probe p : options.probes)
    if (!probe_applies(p, arm)) result.skipped.push_back(p);
  auto asked = [&](Probe p) { return sg::asked(options, arm, p); };
  const int64_t extra = arm.zero == ZeroOption::sinktoken ? 1 : 0;
  // Table 8's columns: clean, then each junk × cutoff × dose > 0.
  std::vector<OverrideColumn> columns{{std::nullopt}};
  const auto directions = gate_directions(model);
  if (asked(Probe::overrides))
    for (const auto junk : options.junk)
      for (const auto cutoff : options.cutoffs)
        for (const double dose : options.doses) {
          if (dose == 0) continue;
          if (junk == JunkType::structured && options.batch_size < 2)
            throw UsageError("structured junk comes from another sequence of the batch: --batch-size must be at least 2");
          if (const auto why = junk_not_defined(junk, arm); !why.empty()) throw UsageError(why);
          columns.push_back({CorruptionSpec{junk, cutoff, dose, options.seed, extra}});
        }
  const bool telemetry_on = asked(Probe::sinks) || asked(Probe::selectivity) || asked(Probe::gate_tokens) ||
                            asked(Probe::kurtosis) || asked(Probe::direction);

  torch::NoGradGuard no_grad;
  AutocastGuard autocast(options.device);
  EvaluationScope scope(model);
  const auto batches =
      evaluation_batches(tokens, result.eval_seed, options.batches, options.batch_size, result.context, options.device);
  const int64_t passes = (telemetry_on ? 1 : 0) +
                         (asked(Probe::overrides) ? static_cast<int64_t>(overrides().size() * columns.size()) : 0);
  PassProgress progress(passes, options.progress);
  ProbeRun run{model, arm, options, batches, m.n_layer, m.n_head, m.vocab_size, extra, arm.zero != ZeroOption::none,
               result, progress};
  if (telemetry_on) telemetry_probes(run);
  if (asked(Probe::overrides)) override_probe(run, columns, directions);
  return result;
}

ResultTable probe_table() {
  ResultTable table;
  for (const char* key : {"tier", "arm"}) table.add_column(key, Role::key, ColumnType::string);
  table.add_column("seed", Role::key, ColumnType::int64);
  for (const char* key : {"probe", "statistic", "override", "junk", "cutoff"})
    table.add_column(key, Role::key, ColumnType::string);
  table.add_column("dose", Role::key, ColumnType::float64);
  for (const char* key : {"layer", "head", "end"}) table.add_column(key, Role::key, ColumnType::string);
  for (const char* key : {"rank", "token"}) table.add_column(key, Role::key, ColumnType::int64);
  table.add_column("text", Role::key, ColumnType::string);
  table.add_column("value", Role::value, ColumnType::float64);
  table.add_column("context", Role::value, ColumnType::int64).units = "tokens";
  table.add_column("eval_seed", Role::value, ColumnType::int64);
  return table;
}

void append_probe_rows(ResultTable& table, const RunConfig& config, const ProbeResult& result) {
  for (const auto& r : result.rows)
    table.append_row({config.tier, config.model.arm.name(), config.seed, to_string(r.probe), r.statistic,
                      r.override_name, r.junk, r.cutoff, r.dose, r.layer, r.head, r.end, r.rank, r.token, r.text,
                      r.value, result.context, result.eval_seed});
}

}  // namespace sg
