// injection.cpp — the injection battery and exposure accounting for one model.
#include "lib/instruments/injection.h"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "lib/base/error.h"
#include "lib/base/text.h"
#include "lib/model/runtime.h"
#include "lib/model/tensors.h"

namespace sg {
namespace {

/// Running sums of one (cutoff, layer) exposure cell.
struct ExposureSums {
  double quiet = 0, phantom = 0;
  int64_t rows = 0, quiet_reads = 0, reads = 0;
};

}  // namespace

void set_battery(InjectionOptions& options, const std::vector<std::string>& junk, const std::vector<std::string>& cutoffs,
                 const std::vector<std::string>& doses) {
  auto items = [](const std::vector<std::string>& texts, const std::string& option) {
    const auto list = split_lists(texts);
    if (list.empty()) throw UsageError(option + " is empty");
    for (size_t i = 0; i < list.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (list[i] == list[j]) throw UsageError(option + ": '" + list[i] + "' is given twice");
    return list;
  };
  options.junk.clear();
  for (const auto& name : items(junk, "--junk")) options.junk.push_back(parse_junk(name));
  options.cutoffs.clear();
  for (const auto& name : items(cutoffs, "--cutoff")) options.cutoffs.push_back(parse_cutoff(name));
  options.doses.clear();
  for (const auto& text : items(doses, "--dose")) {
    const double dose = parse_number(text, "--dose");
    if (!(dose >= 0)) throw UsageError("--dose: '" + text + "' is not a dose (a finite number >= 0)");
    options.doses.push_back(dose);
  }
}

std::pair<torch::Tensor, torch::Tensor> exposure_shares(const torch::Tensor& weights, const torch::Tensor& phantom_mass,
                                                        const torch::Tensor& read_norms, Cutoff cutoff, int64_t skip) {
  const int64_t t = weights.size(-1), length = t - skip;
  const auto rows = weights.narrow(2, skip, length).to(torch::kDouble);                 // (B, H, Tr, T)
  const auto quiet = quiet_mask(read_norms.narrow(2, skip, length), cutoff);            // (B, H, Tr)
  const auto on_quiet = (rows.narrow(3, skip, length) * quiet.unsqueeze(2).to(torch::kDouble)).sum(-1);
  torch::Tensor phantom;
  if (skip > 0) phantom = rows.select(-1, 0);
  else if (phantom_mass.defined()) phantom = phantom_mass.to(torch::kDouble);
  return {on_quiet, phantom};
}

int64_t injection_context(const InjectionOptions& options, const ModelConfig& model) {
  if (options.context < 0) throw UsageError("--context must be positive (0: min(512, the model's context))");
  const int64_t context = options.context > 0 ? options.context : std::min<int64_t>(512, model.block_size);
  if (context > model.block_size)
    throw UsageError("--context " + std::to_string(context) + " exceeds the model's context of " +
                     std::to_string(model.block_size) + " tokens");
  return context;
}

std::vector<torch::Tensor> gate_directions(GPTImpl& model) {
  std::vector<torch::Tensor> out;
  for (const auto& block : *model.blocks) {
    const auto& w = block->as<Block>()->attn->gate_w;
    if (!w.defined()) return {};
    out.push_back(w.detach());
  }
  return out;
}

EvaluationScope::EvaluationScope(GPTImpl& model) : model_(model), was_training_(model.is_training()) { model_.eval(); }

EvaluationScope::~EvaluationScope() {
  model_.set_hooks(nullptr);
  model_.set_backend(AttentionBackend::automatic);
  model_.train(was_training_);
}

PassProgress::PassProgress(int64_t passes, std::function<void(const std::string&)> progress)
    : passes_(passes), progress_(std::move(progress)), start_(std::chrono::steady_clock::now()) {}

void PassProgress::report(const std::string& what) {
  ++done_;
  if (!progress_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  progress_(what + "  (" + std::to_string(done_) + "/" + std::to_string(passes_) + ", eta " +
            format_duration(elapsed / static_cast<double>(done_) * static_cast<double>(passes_ - done_)) + ")");
}

std::vector<Batch> evaluation_batches(const TokenFile& tokens, int64_t eval_seed, int64_t batches, int64_t batch_size,
                                      int64_t context, const torch::Device& device) {
  std::vector<Batch> out;
  for (int64_t k = 0; k < batches; ++k) {
    auto batch = sample_batch(tokens, Split::val, eval_seed, k * batch_size, batch_size, context);
    out.push_back({batch.inputs.to(device), batch.targets.to(device)});
  }
  return out;
}

namespace {

/// The exposure pass (Table 9): the quiet and phantom shares of each layer's attention, and of all
/// layers, per cutoff, on a clean pass over `batches` with explicit attention weights.
std::vector<Exposure> measure_exposure(GPTImpl& model, int64_t layers, const std::vector<Batch>& batches,
                                       const std::vector<Cutoff>& cutoffs, int64_t skip) {
  std::vector<Exposure> exposure;
  std::vector<std::vector<ExposureSums>> sums(cutoffs.size(), std::vector<ExposureSums>(layers));
  auto hooks = std::make_shared<AttentionHooks>();
  hooks->telemetry = [&](int64_t l, const AttentionTelemetry& record) {
    for (size_t c = 0; c < cutoffs.size(); ++c) {
      const auto [quiet, phantom] =
          exposure_shares(record.weights, record.phantom_mass, record.read_norms, cutoffs[c], skip);
      const auto quiet_reads = quiet_mask(record.read_norms.narrow(2, skip, record.read_norms.size(2) - skip),
                                          cutoffs[c]);
      auto& cell = sums[c].at(l);
      cell.quiet += quiet.sum().item<double>();
      cell.phantom += phantom.defined() ? phantom.sum().item<double>() : std::nan("");
      cell.rows += quiet.numel();
      cell.quiet_reads += quiet_reads.sum().item<int64_t>();
      cell.reads += quiet_reads.numel();
    }
  };
  model.set_hooks(hooks);
  for (const auto& batch : batches) model.hidden(batch.inputs);
  model.set_hooks(nullptr);
  for (size_t c = 0; c < cutoffs.size(); ++c) {
    Exposure all{cutoffs[c], -1};
    for (int64_t l = 0; l < layers; ++l) {
      const auto& cell = sums[c][l];
      Exposure layer{cutoffs[c], l, cell.quiet / static_cast<double>(cell.rows),
                     cell.phantom / static_cast<double>(cell.rows), cell.quiet_reads, cell.reads};
      all.quiet_mass += layer.quiet_mass / static_cast<double>(layers);
      all.phantom_mass += layer.phantom_mass / static_cast<double>(layers);
      all.quiet += layer.quiet;
      all.reads += layer.reads;
      exposure.push_back(layer);
    }
    exposure.push_back(all);
  }
  return exposure;
}

}  // namespace

InjectionResult inject(GPTImpl& model, const RunConfig& config, const TokenFile& tokens, const InjectionOptions& options) {
  if (options.batches < 1) throw UsageError("--batches must be at least 1");
  if (options.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  for (double dose : options.doses)
    if (!(dose >= 0) || !std::isfinite(dose)) throw UsageError("a dose must be a finite number >= 0, not " + std::to_string(dose));
  const Arm& arm = config.model.arm;
  InjectionResult result;
  result.context = injection_context(options, config.model);
  result.eval_seed = options.eval_seed >= 0 ? options.eval_seed : config.train.eval_seed;
  const auto directions = gate_directions(model);
  std::vector<JunkType> junk_types;
  for (JunkType junk : options.junk) {
    if (const auto why = junk_not_defined(junk, arm); !why.empty()) {
      if (!options.skip_inapplicable) throw UsageError(why);
      result.skipped.push_back(junk);
      continue;
    }
    if (junk == JunkType::structured && options.batch_size < 2)
      throw UsageError("structured junk comes from another sequence of the batch: --batch-size must be at least 2");
    junk_types.push_back(junk);
  }
  const int64_t skip = arm.zero == ZeroOption::sinktoken ? 1 : 0;

  torch::NoGradGuard no_grad;
  AutocastGuard autocast(options.device);
  EvaluationScope scope(model);
  model.set_backend(options.backend);
  const auto batches =
      evaluation_batches(tokens, result.eval_seed, options.batches, options.batch_size, result.context, options.device);
  const int64_t passes = 1 + (options.exposure ? 1 : 0) +
                         static_cast<int64_t>(junk_types.size() * options.cutoffs.size() * options.doses.size());
  PassProgress progress(passes, options.progress);
  auto report = [&](const std::string& what) { progress.report(what); };
  auto mean_loss = [&](const std::function<void(int64_t)>& before_batch) {
    double total = 0;
    for (int64_t k = 0; k < options.batches; ++k) {
      before_batch(k);
      total += model.loss(batches[k].inputs, batches[k].targets).item<double>();
    }
    return total / static_cast<double>(options.batches);
  };

  model.set_hooks(nullptr);
  result.clean_loss = mean_loss([](int64_t) {});
  report("clean loss " + std::to_string(result.clean_loss));

  if (options.exposure) {
    result.exposure = measure_exposure(model, config.model.n_layer, batches, options.cutoffs, skip);
    report("exposure");
  }

  for (JunkType junk : junk_types) {
    for (Cutoff cutoff : options.cutoffs) {
      for (double dose : options.doses) {
        Corruptor corruptor(CorruptionSpec{junk, cutoff, dose, options.seed, skip},
                            along_gate_direction(junk) ? directions : std::vector<torch::Tensor>{});
        model.set_hooks(corruptor.hooks());
        const double loss = mean_loss([&](int64_t k) { corruptor.set_batch(k); });
        model.set_hooks(nullptr);
        result.conditions.push_back({junk, cutoff, dose, loss, corruptor.corrupted_reads(), corruptor.total_reads()});
        std::ostringstream line;
        line << to_string(junk) << " " << to_string(cutoff) << " dose " << dose << ": delta_loss " << std::showpos
             << std::fixed << std::setprecision(4) << loss - result.clean_loss;
        report(line.str());
      }
    }
  }
  return result;
}

ResultTable injection_table() {
  ResultTable table;
  for (const char* key : {"tier", "arm"}) table.add_column(key, Role::key, ColumnType::string);
  table.add_column("seed", Role::key, ColumnType::int64);
  for (const char* key : {"measure", "junk", "cutoff"}) table.add_column(key, Role::key, ColumnType::string);
  table.add_column("dose", Role::key, ColumnType::float64);
  table.add_column("layer", Role::key, ColumnType::string);
  for (const char* value : {"loss", "clean_loss", "delta_loss"}) table.add_column(value, Role::value, ColumnType::float64).units = "nats";
  for (const char* value : {"quiet_mass", "phantom_mass"})
    table.add_column(value, Role::value, ColumnType::float64).units = "fraction of attention mass";
  for (const char* value : {"corrupted", "reads"}) table.add_column(value, Role::value, ColumnType::int64).units = "reads";
  table.add_column("context", Role::value, ColumnType::int64).units = "tokens";
  table.add_column("eval_seed", Role::value, ColumnType::int64);
  return table;
}

void append_injection_rows(ResultTable& table, const RunConfig& config, const InjectionResult& result) {
  const std::string tier = config.tier, arm = config.model.arm.name();
  auto exposure_of = [&](Cutoff cutoff) -> const Exposure* {
    for (const auto& e : result.exposure)
      if (e.cutoff == cutoff && e.layer < 0) return &e;
    return nullptr;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& c : result.conditions) {
    const auto* e = exposure_of(c.cutoff);
    table.append_row({tier, arm, config.seed, "injection", to_string(c.junk), to_string(c.cutoff), c.dose, "all", c.loss,
                      result.clean_loss, c.loss - result.clean_loss, e ? e->quiet_mass : nan, e ? e->phantom_mass : nan,
                      c.corrupted, c.reads, result.context, result.eval_seed});
  }
  for (const auto& e : result.exposure) {
    const bool all = e.layer < 0;
    table.append_row({tier, arm, config.seed, "exposure", "none", to_string(e.cutoff), 0.0,
                      all ? std::string("all") : std::to_string(e.layer), all ? result.clean_loss : nan,
                      all ? result.clean_loss : nan, all ? 0.0 : nan, e.quiet_mass, e.phantom_mass, e.quiet, e.reads,
                      result.context, result.eval_seed});
  }
}

}  // namespace sg
