// survey.cpp — the incidence survey of App. F (definitions in survey.h).
#include "lib/instruments/survey.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/hf/pretrained.h"
#include "lib/io/safetensors.h"
#include "lib/model/checkpoint.h"
#include "lib/model/model.h"
#include "lib/model/runtime.h"
#include "lib/text/tokenizer.h"

namespace sg {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string percentile_suffix(int64_t q) { return "_p" + std::to_string(q); }

/// Encodes just enough of `text` for `needed` tokens: a prefix cut where the GPT-2 pre-tokeniser
/// always cuts (a non-space ASCII byte followed by an ASCII space), so its ids are exactly the
/// first ids of the whole text; the prefix doubles until it suffices or is the whole text.
std::vector<int32_t> encode_prefix(const Tokenizer& tokenizer, const std::string& text, int64_t needed) {
  size_t length = static_cast<size_t>(std::max<int64_t>(needed, 1)) * 8;
  while (true) {
    size_t cut = text.size();
    if (length < text.size()) {
      cut = length;
      while (cut < text.size()) {
        const unsigned char before = static_cast<unsigned char>(text[cut - 1]);
        if (text[cut] == ' ' && before < 0x80 && before != ' ' && !std::isspace(before)) break;
        ++cut;
      }
    }
    auto ids = tokenizer.encode_parallel(std::string_view(text).substr(0, cut), 0);
    if (static_cast<int64_t>(ids.size()) >= needed || cut == text.size()) return ids;
    length *= 2;
  }
}

/// InputError when a token id of `blocks` is outside the model's vocabulary.
void check_vocabulary(const torch::Tensor& blocks, int64_t vocab_size, const std::string& vocabulary,
                      const std::string& hint) {
  const int64_t largest = blocks.max().item<int64_t>();
  if (largest >= vocab_size)
    throw InputError(vocabulary + ": gives token id " + std::to_string(largest) + ", outside the model's vocabulary of " +
                         std::to_string(vocab_size),
                     hint);
}

}  // namespace

void SurveyOptions::validate() const {
  if (sink_positions < 1) throw UsageError("--sink-positions must be at least 1");
  if (batch < 1) throw UsageError("--batch-size must be at least 1");
  if (percentiles.empty()) throw UsageError("--percentiles needs at least one percentile");
  for (auto q : percentiles)
    if (q <= 0 || q >= 100) throw UsageError("percentile " + std::to_string(q) + " is not in (0, 100)");
}

IncidenceAccumulator::IncidenceAccumulator(int64_t layers, int64_t heads, SurveyOptions options, int64_t expected_blocks)
    : heads_(heads), expected_blocks_(expected_blocks), options_(std::move(options)), layers_(static_cast<size_t>(layers)) {
  options_.validate();
  const auto zeros = torch::zeros({heads}, torch::kFloat64);
  for (auto& layer : layers_) {
    layer.r0_sum = zeros.clone();
    layer.sink_sum = zeros.clone();
    layer.position0_sum = zeros.clone();
    layer.zero_sum = zeros.clone();
  }
}

namespace {

/// A sliding-window layer's sink and received mass (survey.h): query i's sink is the first
/// `sink` keys of its window, start_i = max(0, i - W + 1). weights (B, H, T, T) -> sink mass per
/// query i >= sink (B, H, T - sink) and the non-sink mass each key j >= sink receives (B, H, T - sink).
std::pair<torch::Tensor, torch::Tensor> window_sums(const torch::Tensor& weights, int64_t window, int64_t sink) {
  const int64_t length = weights.size(3), rest = length - sink;
  const auto positions = torch::arange(length, torch::TensorOptions().dtype(torch::kLong).device(weights.device()));
  const auto start = (positions - window + 1).clamp_min(0).unsqueeze(1);  // (T, 1)
  const auto keys = positions.unsqueeze(0);                               // (1, T)
  const auto in_sink = keys.ge(start).logical_and(keys.lt(start + sink)).to(weights.scalar_type());  // (T, T)
  const auto sink_rows = (weights * in_sink).narrow(2, sink, rest).sum({3}, false, torch::kFloat64);
  const auto received = (weights * (1 - in_sink)).narrow(3, sink, rest).sum({2}, false, torch::kFloat64);
  return {sink_rows, received};
}

}  // namespace

void IncidenceAccumulator::add(int64_t layer, const torch::Tensor& weights, const torch::Tensor& read_norms,
                               const torch::Tensor& phantom_mass, int64_t extra_positions, int64_t window) {
  if (layer < 0 || layer >= static_cast<int64_t>(layers_.size()))
    throw UsageError("survey: layer " + std::to_string(layer) + " out of range");
  if (weights.dim() != 4 || weights.size(1) != heads_ || weights.size(2) != weights.size(3))
    throw UsageError("survey: attention weights must be (B, " + std::to_string(heads_) + ", T, T)");
  const int64_t batch = weights.size(0), keys = weights.size(3), extra = extra_positions;
  const int64_t sink = options_.sink_positions, length = keys - extra;
  if (length <= sink)
    throw UsageError("survey: blocks of " + std::to_string(length) + " tokens leave no position beyond the " +
                     std::to_string(sink) + " sink positions");
  if (read_norms.sizes() != torch::IntArrayRef({batch, heads_, keys}))
    throw UsageError("survey: read norms must be (B, H, T)");
  if (phantom_mass.defined() && phantom_mass.sizes() != torch::IntArrayRef({batch, heads_, keys}))
    throw UsageError("survey: phantom mass must be (B, H, T)");
  const bool windowed = window > 0 && window < length;
  if (windowed && (extra > 0 || window <= sink))
    throw UsageError("survey: a sliding window of " + std::to_string(window) + " needs more than the " +
                     std::to_string(sink) + " sink positions and no sink token");
  const int64_t first = extra + sink, rest = length - sink;  // key index of the first pool key; pool size per block
  auto& slot = layers_[static_cast<size_t>(layer)];
  if (slot.received.defined() && slot.received.size(2) != rest)
    throw UsageError("survey: blocks of " + std::to_string(length) + " tokens after blocks of " +
                     std::to_string(slot.received.size(2) + sink) + " in one survey");

  const auto rows = weights.narrow(2, first, rest);                           // (B, H, T-S, E+T): queries i >= S
  const auto windowed_sums = windowed ? window_sums(weights, window, sink) : std::pair<torch::Tensor, torch::Tensor>{};
  auto sink_rows = windowed ? windowed_sums.first : rows.narrow(3, 0, first).sum({3}, false, torch::kFloat64);  // (B, H, T-S)
  auto zero_rows = extra > 0 ? rows.narrow(3, 0, extra).sum({3}, false, torch::kFloat64)
                             : torch::zeros_like(sink_rows);
  if (phantom_mass.defined()) {
    const auto phantom = phantom_mass.narrow(2, first, rest).to(torch::kFloat64);
    sink_rows = sink_rows + phantom;
    zero_rows = zero_rows + phantom;
  }
  const auto position0 = rows.select(3, extra).to(torch::kFloat64);  // (B, H, T-S)
  const std::vector<int64_t> blocks_and_queries{0, 2};
  slot.sink_sum += sink_rows.sum(blocks_and_queries).cpu();  // (H)
  slot.zero_sum += zero_rows.sum(blocks_and_queries).cpu();
  slot.position0_sum += position0.sum(blocks_and_queries).cpu();
  slot.r0_sum += read_norms.select(2, extra).to(torch::kFloat64).sum(0).cpu();
  if (!slot.received.defined() || slot.blocks + batch > slot.received.size(0)) {
    const int64_t capacity = std::max({expected_blocks_, slot.blocks + batch, 2 * slot.blocks});
    auto received = torch::zeros({capacity, heads_, rest}, torch::kFloat64);
    auto norms = torch::zeros({capacity, heads_, rest}, torch::kFloat64);
    if (slot.blocks > 0) {
      received.narrow(0, 0, slot.blocks).copy_(slot.received.narrow(0, 0, slot.blocks));
      norms.narrow(0, 0, slot.blocks).copy_(slot.read_norms.narrow(0, 0, slot.blocks));
    }
    slot.received = received;
    slot.read_norms = norms;
  }
  // m_bj: the mass each pool key receives from all queries (only queries i >= j >= S can see it).
  slot.received.narrow(0, slot.blocks, batch)
      .copy_(windowed ? windowed_sums.second : weights.narrow(3, first, rest).sum({2}, false, torch::kFloat64));
  slot.read_norms.narrow(0, slot.blocks, batch).copy_(read_norms.narrow(2, first, rest));
  slot.queries += batch * rest;
  slot.blocks += batch;
}

std::vector<HeadIncidence> IncidenceAccumulator::finish(bool zero_option) const {
  std::vector<HeadIncidence> result;
  const size_t percentiles = options_.percentiles.size();
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto& slot = layers_[l];
    torch::Tensor received, norms;  // (H, |P|) in pool order (block, position)
    if (slot.blocks > 0) {
      received = slot.received.narrow(0, 0, slot.blocks).transpose(0, 1).reshape({heads_, -1});
      norms = slot.read_norms.narrow(0, 0, slot.blocks).transpose(0, 1).reshape({heads_, -1});
    }
    for (int64_t h = 0; h < heads_; ++h) {
      HeadIncidence head;
      head.layer = static_cast<int64_t>(l);
      head.head = h;
      head.blind_ratio.assign(percentiles, kNaN);
      head.content_share.assign(percentiles, kNaN);
      if (slot.blocks == 0) {
        head.sink_mass = head.position0_mass = head.zero_option_mass = head.r0_ratio = kNaN;
        result.push_back(head);
        continue;
      }
      const double queries = static_cast<double>(slot.queries);
      head.sink_mass = slot.sink_sum[h].item<double>() / queries;
      head.position0_mass = slot.position0_sum[h].item<double>() / queries;
      head.zero_option_mass = zero_option ? slot.zero_sum[h].item<double>() / queries : kNaN;
      const auto m = received[h], r = norms[h];  // (|P|)
      head.r0_ratio = (slot.r0_sum[h].item<double>() / static_cast<double>(slot.blocks)) / r.mean().item<double>();
      const auto order = std::get<1>(r.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
      const auto mass_sorted = m.index_select(0, order).cumsum(0);
      const auto content_sorted = (m * r).index_select(0, order).cumsum(0);
      const int64_t pool = r.size(0);
      const double mass_total = m.sum().item<double>(), content_total = (m * r).sum().item<double>();
      for (size_t p = 0; p < percentiles; ++p) {
        const auto k = static_cast<int64_t>(std::llround(static_cast<double>(options_.percentiles[p]) * pool / 100.0));
        if (k <= 0) continue;
        const double band = static_cast<double>(k) / static_cast<double>(pool);
        head.blind_ratio[p] = mass_sorted[k - 1].item<double>() / mass_total / band;
        head.content_share[p] = content_sorted[k - 1].item<double>() / content_total;
      }
      result.push_back(head);
    }
  }
  return result;
}

std::vector<std::string> statistic_names(const SurveyOptions& options, bool zero_option) {
  std::vector<std::string> names{"sink_mass", "position0_mass"};
  if (zero_option) names.push_back("zero_option_mass");
  names.push_back("r0_ratio");
  for (auto q : options.percentiles) names.push_back("blind_ratio" + percentile_suffix(q));
  for (auto q : options.percentiles) names.push_back("content_share" + percentile_suffix(q));
  return names;
}

torch::Tensor token_blocks(const std::vector<int32_t>& ids, int64_t count, int64_t length, const std::string& source) {
  if (count < 1 || length < 1) throw UsageError("--blocks and --block-length must be at least 1");
  const int64_t needed = count * length;
  if (static_cast<int64_t>(ids.size()) < needed)
    throw InputError(source + ": " + std::to_string(ids.size()) + " tokens, fewer than the " + std::to_string(count) +
                         " blocks of " + std::to_string(length) + " the survey needs",
                     "use a longer text, or fewer --blocks / a shorter --block-length");
  std::vector<int64_t> wide(ids.begin(), ids.begin() + needed);
  return torch::tensor(wide, torch::kInt64).view({count, length});
}

std::vector<HeadIncidence> survey_model(const PretrainedModel& model, const torch::Tensor& blocks,
                                        const SurveyOptions& options) {
  options.validate();
  const auto& config = model.config();
  if (blocks.size(1) > config.n_positions)
    throw UsageError("blocks of " + std::to_string(blocks.size(1)) + " tokens exceed the context of " +
                         std::to_string(config.n_positions) + " of " + model.folder(),
                     "use a shorter --block-length");
  IncidenceAccumulator survey(config.n_layer, config.n_head, options, blocks.size(0));
  torch::NoGradGuard no_grad;
  for (int64_t start = 0; start < blocks.size(0); start += options.batch) {
    const auto batch = blocks.narrow(0, start, std::min(options.batch, blocks.size(0) - start));
    model.hidden(batch, [&](int64_t layer, const AttentionTelemetry& t) {
      survey.add(layer, t.weights, t.read_norms, t.phantom_mass, 0, config.windows.empty() ? 0 : config.windows[static_cast<size_t>(layer)]);
    });
    log::debug("survey: " + model.folder() + ": blocks " + std::to_string(start + batch.size(0)) + "/" +
               std::to_string(blocks.size(0)));
  }
  return survey.finish(/*zero_option=*/config.sinks);
}

std::vector<HeadIncidence> survey_model(GPTImpl& model, const torch::Tensor& blocks, const SurveyOptions& options) {
  options.validate();
  const auto& config = model.config();
  if (blocks.size(1) > config.block_size)
    throw UsageError("blocks of " + std::to_string(blocks.size(1)) + " tokens exceed the model's context of " +
                         std::to_string(config.block_size),
                     "use --block-length " + std::to_string(config.block_size) + " or less");
  const bool sink_token = config.arm.zero == ZeroOption::sinktoken;
  const bool zero_option = config.arm.zero != ZeroOption::none;
  IncidenceAccumulator survey(config.n_layer, config.n_head, options, blocks.size(0));
  auto hooks = std::make_shared<AttentionHooks>();
  hooks->telemetry = [&](int64_t layer, const AttentionTelemetry& t) {
    survey.add(layer, t.weights, t.read_norms, t.phantom_mass, sink_token ? 1 : 0);
  };
  model.set_hooks(hooks);
  model.eval();
  torch::NoGradGuard no_grad;
  const auto device = model.wte->weight.device();
  try {
    for (int64_t start = 0; start < blocks.size(0); start += options.batch) {
      const auto batch = blocks.narrow(0, start, std::min(options.batch, blocks.size(0) - start)).to(device);
      model.hidden(batch);
    }
  } catch (...) {
    model.set_hooks(nullptr);
    throw;
  }
  model.set_hooks(nullptr);
  return survey.finish(zero_option);
}

ResultTable survey_table() {
  ResultTable table;
  for (const char* name : {"model", "family", "arm", "attention"}) table.add_column(name, Role::key, ColumnType::string);
  for (const char* name : {"params_m", "layers", "heads"}) table.add_column(name, Role::key, ColumnType::int64);
  table.add_column("scope", Role::key, ColumnType::string);
  table.add_column("layer", Role::key, ColumnType::int64);
  table.add_column("head", Role::key, ColumnType::int64);
  table.add_column("statistic", Role::key, ColumnType::string);
  table.add_column("value", Role::value, ColumnType::float64);
  return table;
}

double finite_mean(const std::vector<double>& values) {
  double sum = 0;
  int64_t count = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++count;
  return count ? sum / static_cast<double>(count) : kNaN;
}

double finite_median(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void append_survey(ResultTable& table, const SurveyedModel& model, const std::vector<HeadIncidence>& heads,
                   const SurveyOptions& options) {
  const auto names = statistic_names(options, model.zero_option);
  const int64_t params_m = std::llround(static_cast<double>(model.parameters) / 1e6);
  // The values of one head in the order of `names`.
  auto values_of = [&](const HeadIncidence& h) {
    std::vector<double> v{h.sink_mass, h.position0_mass};
    if (model.zero_option) v.push_back(h.zero_option_mass);
    v.push_back(h.r0_ratio);
    v.insert(v.end(), h.blind_ratio.begin(), h.blind_ratio.end());
    v.insert(v.end(), h.content_share.begin(), h.content_share.end());
    return v;
  };
  std::vector<std::vector<double>> columns(names.size());
  for (const auto& h : heads) {
    const auto values = values_of(h);
    for (size_t s = 0; s < names.size(); ++s) {
      table.append_row({model.name, model.family, model.arm, model.attention, params_m, model.layers, model.heads, "head", h.layer, h.head,
                        names[s], values[s]});
      columns[s].push_back(values[s]);
    }
  }
  for (size_t s = 0; s < names.size(); ++s) {
    const double summary = names[s] == "r0_ratio" ? finite_median(columns[s]) : finite_mean(columns[s]);
    table.append_row({model.name, model.family, model.arm, model.attention, params_m, model.layers, model.heads, "model", -1, -1, names[s],
                      summary});
  }
}

void survey_checkpoint(const std::string& path, const std::string& text, const SurveyRun& run, ResultTable& table) {
  run.statistics.validate();
  const auto started = std::chrono::steady_clock::now();
  // A checkpoint's weights stay as stored, each block converted to float32 while it runs: an 8B
  // bf16 model needs about 16 GB, not the 32 GB of its float32 copy.
  const auto model = LanguageModel::load(path, parse_device(run.device), run.tokenizer, WeightResidence::per_block);
  const std::string name = run.name.empty() ? model.name() : run.name;
  const auto& vocabulary = model.vocabulary();
  const auto ids = encode_prefix(model.tokenizer(), text, run.blocks * run.block_length);
  const auto blocks = token_blocks(ids, run.blocks, run.block_length, run.text_source + " (tokenised with " + vocabulary + ")");
  SurveyedModel info;
  info.name = name;
  std::vector<HeadIncidence> heads;
  if (model.pretrained()) {
    const auto& pretrained = model.pretrained_model();
    const auto& c = pretrained.config();
    check_vocabulary(blocks, c.vocab_size, vocabulary, "use the checkpoint's own tokenizer");
    info.family = c.model_type();
    info.arm = "baseline";
    info.parameters = pretrained.parameter_count();
    info.layers = c.n_layer;
    info.heads = c.n_head;
    info.attention = c.attention_kind();
    info.zero_option = c.sinks;
    log::info("sg-survey: " + name + ": " + c.model_type() + " (" + info.attention + "), " + std::to_string(c.n_layer) + " layers × " +
              std::to_string(c.n_head) + " heads, " + std::to_string(info.parameters) + " parameters");
    heads = survey_model(pretrained, blocks, run.statistics);
  } else {
    auto& sinkgate = model.run_model();
    const auto& c = sinkgate.config();
    check_vocabulary(blocks, c.vocab_size, vocabulary, "give the vocabulary the run was trained with (--vocab)");
    info.family = "sinkgate";
    info.arm = c.arm.name();
    info.parameters = sinkgate.parameter_count();
    info.layers = c.n_layer;
    info.heads = c.n_head;
    info.zero_option = c.arm.zero != ZeroOption::none;
    log::info("sg-survey: " + name + ": sinkgate " + info.arm + ", " + std::to_string(c.n_layer) + " layers × " +
              std::to_string(c.n_head) + " heads");
    heads = survey_model(sinkgate, blocks, run.statistics);
  }
  append_survey(table, info, heads, run.statistics);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  log::info("sg-survey: " + name + ": " + std::to_string(run.blocks) + " blocks of " + std::to_string(run.block_length) +
            " tokens in " + std::to_string(static_cast<int64_t>(std::lround(seconds))) + " s");
}

}  // namespace sg
