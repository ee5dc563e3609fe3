// train.cpp — the training loop.
#include "lib/train/train.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <signal.h>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lib/base/environment.h"
#include "lib/base/error.h"
#include "lib/base/text.h"
#include "lib/base/log.h"
#include "lib/io/file_lock.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/kernels/cpu_kernels.h"
#include "lib/kernels/loss_tuning.h"
#include "lib/model/runtime.h"
#include "lib/train/optimizer.h"

namespace sg {
namespace {

using Clock = std::chrono::steady_clock;

/// The first SIGTERM or SIGINT asks the loop to checkpoint and stop; a second one stops at once.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signal) {
  if (g_stop_signal != 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  g_stop_signal = signal;
}

/// Installs the handler for the loop's lifetime and restores the previous ones after.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // file writes in progress are not interrupted
    sigaction(SIGTERM, &action, &old_term_);
    sigaction(SIGINT, &action, &old_int_);
  }
  ~StopSignals() {
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGINT, &old_int_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int received() const { return g_stop_signal; }

 private:
  struct sigaction old_term_ {}, old_int_ {};
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Throws DistributedError unless every rank holds bitwise the same weights (a digest of them).
void check_same_weights(GPTImpl& model, Communicator& communicator, int64_t step) {
  torch::NoGradGuard no_grad;
  std::string bytes;
  for (const auto& item : model.named_parameters()) {
    const auto cpu = item.value().detach().to(torch::kCPU).contiguous();
    bytes.append(static_cast<const char*>(cpu.data_ptr()), static_cast<size_t>(cpu.numel() * cpu.element_size()));
  }
  const std::string digest = sha256_bytes(bytes);
  communicator.check_same(digest, "the weights after step " + std::to_string(step));
  log::info("sg-train: rank " + std::to_string(communicator.rank()) + ": the " + std::to_string(communicator.world_size()) +
            " ranks hold the same weights after step " + std::to_string(step) + " (sha256 " + digest.substr(0, 16) + "…)");
}

/// The environment variables that choose the loss plan of a run that has none (loss_tuning.h)
/// and are set, by the name they were given.
std::vector<std::string> plan_variables_set() {
  std::vector<std::string> names;
  for (const char* suffix : {"LOSS_CHUNK_ROWS", "LOSS_PRODUCTS", "LOSS_PACKED", "LOSS_TUNING", "CPU_KERNELS"})
    if (sinkgate_env(suffix)) names.push_back(sinkgate_env_name(suffix));
  return names;
}

int64_t row_kernel_number(const std::string& name) { return name == "avx512f" ? 2 : name == "avx2" ? 1 : 0; }
std::string row_kernel_named(int64_t number) { return number == 2 ? "avx512f" : number == 1 ? "avx2" : "portable"; }

/// The loss plan the run trains with (lib/SCHEMA.md "loss_plan"), from config.train.loss_plan:
/// auto through loss_tuning (the environment, the machine's cache, a measurement), or the plan it
/// names (a row kernel left out: the one the CPU kernel switches give). `recorded` is the run
/// file's plan on a resume ("auto" in files of older versions). Says what it chose, and warns
/// where a resume will not be bitwise identical to an uninterrupted run. With a communicator,
/// every rank takes rank 0's plan.
LossPlan fix_loss_plan(const RunConfig& config, const TrainOptions& options, const std::string& recorded,
                       Communicator* communicator, const std::string& prefix) {
  const bool cpu_float32 = options.device.is_cpu();  // autocast (bf16) runs on CUDA only
  const LossPlanSpec spec = parse_loss_plan(config.train.loss_plan);
  const bool keeps_recorded = options.resume && options.loss_plan.empty() && recorded != "auto";
  LossPlan plan;
  if (spec.automatic()) {
    plan = fixed_loss_plan(cpu_float32, config.train.micro_batch * config.model.block_size, config.model.n_embd,
                           config.model.vocab_size);
  } else if (!cpu_float32) {  // cuBLAS products and ATen rows: the chunk is the plan's only choice
    plan = {spec.chunk_rows, LossProducts::plain, "portable"};
    if (spec.products != "plain" || (!spec.row_kernel.empty() && spec.row_kernel != "portable"))
      log::info(prefix + "on " + options.device.str() + " the loss runs cuBLAS's products and ATen's rows: of loss_plan " +
                config.train.loss_plan + " only the chunk of " + std::to_string(spec.chunk_rows) + " rows applies");
  } else {
    plan = {spec.chunk_rows, *loss_products_named(spec.products),
            !spec.row_kernel.empty() ? spec.row_kernel : has_exp_shifted_rows() ? exp_shifted_rows_isa() : "portable"};
    if (const std::string missing = loss_plan_missing(plan); !missing.empty()) {
      if (!keeps_recorded)
        throw UsageError("loss_plan " + loss_plan_text(plan) + " needs " + missing,
                         "name a plan this machine runs, or --set loss_plan=auto");
      const LossPlan instead = runnable_loss_plan(plan);
      log::warn("this machine cannot run the run's loss plan " + loss_plan_text(plan) + " (no " +
                missing + "): it runs " + loss_plan_text(instead) +
                ", so the resumed run will not be bitwise identical to an uninterrupted one");
      plan = instead;
    }
  }
  if (communicator) {  // rank 0's plan everywhere: one arithmetic for every rank's share
    std::vector<torch::Tensor> numbers{torch::tensor({plan.chunk_rows, static_cast<int64_t>(plan.products),
                                                      row_kernel_number(plan.row_kernel)},
                                                     torch::TensorOptions().dtype(torch::kLong))
                                           .to(options.device)};
    communicator->broadcast(numbers, "the broadcast of rank 0's loss plan");
    const auto values = numbers[0].to(torch::kCPU);
    plan = {values[0].item<int64_t>(), static_cast<LossProducts>(values[1].item<int64_t>()),
            row_kernel_named(values[2].item<int64_t>())};
  }
  const std::string text = loss_plan_text(plan);
  if (keeps_recorded) {
    std::string note;
    for (const auto& name : plan_variables_set()) note += (note.empty() ? "" : ", ") + name;
    log::info(prefix + "loss plan " + text + ", the run's own (recorded in its file)" +
              (note.empty() ? "" : "; " + note + " would choose a new run's plan, not this one's: --set loss_plan=... replaces it"));
  } else if (options.resume && recorded == "auto") {
    log::info(prefix + "loss plan " + text + ": the run file records none (written before sinkgate recorded it), so "
              "this resume fixes one and records it; the steps before may have run another");
  } else if (options.resume && text != recorded) {
    log::warn("loss plan " + text + " replaces the run's " + recorded +
              " (--set loss_plan): the resumed run will not be bitwise identical to an uninterrupted one");
  } else {
    log::info(prefix + "loss plan " + text + (spec.automatic() ? " (auto: chosen for this machine; recorded in the run file)" : ""));
  }
  return plan;
}

}  // namespace

Batch training_batch(const TokenFile& tokens, const RunConfig& config, int64_t step, int64_t micro) {
  const auto& t = config.train;
  return sample_batch(tokens, Split::train, config.seed, step * t.batch() + micro * t.micro_batch, t.micro_batch,
                      config.model.block_size);
}

double validation_loss(GPTImpl& model, const TokenFile& tokens, const RunConfig& config, int64_t batches,
                       const torch::Device& device, Communicator* communicator) {
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(device);
  const bool was_training = model.is_training();
  model.eval();
  const auto& t = config.train;
  const int64_t sequences = batches * t.batch();
  const auto [begin, count_here] =
      communicator ? rank_share(sequences, communicator->rank(), communicator->world_size()) : std::make_pair(int64_t{0}, sequences);
  double total = 0;
  for (int64_t first = begin; first < begin + count_here; first += t.micro_batch) {
    const int64_t count = std::min(t.micro_batch, begin + count_here - first);
    const auto batch = sample_batch(tokens, Split::val, t.eval_seed, first, count, config.model.block_size);
    total += model.loss(batch.inputs.to(device), batch.targets.to(device)).item<double>() * static_cast<double>(count);
  }
  model.train(was_training);
  if (communicator) {
    std::vector<torch::Tensor> sum{torch::full({1}, total, torch::TensorOptions().dtype(torch::kFloat64).device(device))};
    communicator->all_reduce_sum(sum, "the validation loss all-reduce");
    total = sum[0].item<double>();
  }
  return total / static_cast<double>(sequences);
}

TrainSummary train(const RunConfig& config_in, const TrainOptions& options) {
  RunConfig config = config_in;
  RunState state;
  const auto tokens = TokenFile::open(options.token_file);
  std::string recorded_plan;  // the run file's loss plan, on a resume
  if (options.resume) {
    state = read_run_state(options.output);
    config = state.config;  // the run file's configuration wins, but for a new loss plan (a warning)
    recorded_plan = config.train.loss_plan;
    if (!options.loss_plan.empty()) config.train.loss_plan = to_string(parse_loss_plan(options.loss_plan));
    if (state.finished) log::info("sg-train: " + options.output + " is already finished");
  } else {
    config.model.validate();
    config.train.validate();
    state.config = config;
    state.labels = options.labels;
  }
  check_vocabulary_fits(tokens, config.model, "the model");
  // Data parallelism: every rank trains; rank 0 alone writes (distributed.h).
  std::unique_ptr<Communicator> communicator;
  const int64_t world = options.distributed.distributed() ? options.distributed.world_size : 1;
  const int64_t rank = options.distributed.distributed() ? options.distributed.rank : 0;
  const bool writer = rank == 0;
  rank_chunks(config.train, 0, 0, world);  // a batch that does not divide among the ranks fails here, before connecting
  if (options.distributed.distributed())
    communicator = Communicator::connect(options.distributed, options.device, options.timeout_seconds);
  // One writer per output, for the whole run (a second sg-train on the same -o fails at once). Taken
  // after the inputs are read, so that a missing run file or folder is reported as such; before the
  // first write.
  std::unique_ptr<FileLock> lock;
  if (writer) lock = std::make_unique<FileLock>(options.output);
  // The token file's SHA-256, as the provenance block hashed it (hashing a large file twice costs).
  const std::string token_sha256 = options.provenance.sha256_of(options.token_file);
  if (options.resume)
    check_token_file(state, options.output, options.token_file, token_sha256, options.allow_other_tokens, "sg-train");
  state.token_file = options.token_file;
  state.token_file_hash = token_sha256;

  GPT model = options.resume ? load_model(options.output, options.device) : build_model(config.model, config.seed);
  model->to(options.device);
  model->train();
  auto optimizer = make_optimizer(*model, config.train);
  if (options.resume) load_optimizer(options.output, *model, *optimizer);
  if (communicator) {
    // The same weights everywhere: rank 0's (a seed gives the same weights on a CPU, not
    // necessarily on every GPU), then gradient hooks for the buckets.
    std::vector<torch::Tensor> parameters;
    for (const auto& p : model->parameters()) parameters.push_back(p);
    {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> data;
      for (const auto& p : parameters) data.push_back(p.data());
      communicator->broadcast(data, "the broadcast of rank 0's weights");
    }
    communicator->install_gradient_hooks(parameters);
  }

  std::string name = options.name.empty() ? config.tier + "/" + config.model.arm.name() + "/" + std::to_string(config.seed)
                                          : options.name;
  for (const auto& [key, value] : state.labels)
    if (key == kRunKey && options.name.empty()) name = value;
  const std::string prefix = "sg-train [" + name + "] ";
  const auto& t = config.train;
  const int64_t tokens_per_step = t.batch() * config.model.block_size;
  {
    std::ostringstream line;
    line << prefix << model->parameter_count() << " parameters, " << tokens_per_step << " tokens a step (" << t.micro_batch
         << " x " << t.accumulation << " sequences of " << config.model.block_size << "), " << t.iterations - state.step
         << " steps to go";
    if (communicator)
      line << "; " << world << " ranks (" << options.distributed.launcher << "), " << t.batch() / world
           << " sequences each a step";
    log::info(line.str());
  }
  const LossPlan loss_plan = fix_loss_plan(config, options, recorded_plan, communicator.get(), prefix);
  config.train.loss_plan = loss_plan_text(loss_plan);
  state.config.train.loss_plan = config.train.loss_plan;
  model->set_loss_plan(loss_plan);
  // The provenance's configuration (sg-train's "key=value" lines) names the plan the run trains
  // with, as /config does, not the "auto" it was asked for: a resumed run's file is then the
  // uninterrupted one's, bit for bit.
  Provenance provenance = options.provenance;
  for (size_t line = 0; line < provenance.config.size();) {
    const size_t end = std::min(provenance.config.find('\n', line), provenance.config.size());
    if (provenance.config.compare(line, 10, "loss_plan=") == 0) {
      provenance.config.replace(line, end - line, "loss_plan=" + config.train.loss_plan);
      break;
    }
    line = end + 1;
  }
  // Rank 0 writes; every rank waits for the file, so that none runs ahead of a checkpoint.
  auto save = [&] {
    if (writer) save_run(options.output, /*force=*/true, *model, optimizer.get(), state, provenance);
    if (communicator) communicator->barrier("the barrier after a checkpoint");
  };
  if (!options.resume) {
    if (writer) h5::check_writable(options.output, options.force);
    save();  // an initial checkpoint: the output exists and is valid from the start
  }

  std::ofstream json_log;
  if (!options.log_json.empty()) {
    json_log.open(options.log_json, std::ios::app);
    if (!json_log) throw OutputError("cannot open " + options.log_json + " for the JSON log (--log-json)");
  }
  auto write_json = [&](nlohmann::ordered_json record) {
    if (!json_log.is_open()) return;
    json_log << record.dump() << "\n" << std::flush;
    if (!json_log) throw OutputError("cannot write the JSON log " + options.log_json);
  };
  auto finite = [](double x) { return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr); };

  StopSignals signals;
  const auto start = Clock::now();
  const int64_t first_step = state.step;
  int64_t steps_this_run = 0;
  double train_seconds = 0;       // optimizer steps of this invocation, evaluations excluded
  double window_seconds = 0;      // since the last progress line
  int64_t window_steps = 0;
  double eval_batch_seconds = -1;  // measured at the first evaluation
  auto last_line = Clock::now();
  // Time left: the steps at this invocation's mean step time, plus the evaluation batches still to
  // come (every eval_interval steps and at the last, then final_eval_batches) at the measured
  // time of one (before the first evaluation: a third of a step, a forward pass's share).
  auto eta = [&](int64_t step) {
    const double per_step = steps_this_run > 0 ? train_seconds / static_cast<double>(steps_this_run) : 0;
    const int64_t evals = t.iterations / t.eval_interval - step / t.eval_interval +
                          (t.iterations % t.eval_interval != 0 && step < t.iterations ? 1 : 0);
    const double per_eval_batch = eval_batch_seconds >= 0 ? eval_batch_seconds : per_step / 3;
    const int64_t eval_batches = evals * t.eval_batches + (state.finished ? 0 : t.final_eval_batches);
    return static_cast<double>(t.iterations - step) * per_step + static_cast<double>(eval_batches) * per_eval_batch;
  };
  while (state.step < t.iterations && !state.finished) {
    const auto step_start = Clock::now();
    const double lr = learning_rate(t, state.step);
    set_learning_rate(*optimizer, lr);
    optimizer->zero_grad();
    // Summed on the device and read once per step: a read per micro-batch would make the host
    // wait for the GPU instead of queueing the next micro-batch's kernels.
    // This rank's windows of the step (all of them in one process), each chunk's mean loss
    // weighted by its share of the batch; in one process each weight is 1/accumulation exactly.
    torch::Tensor loss_sum;
    const auto chunks = rank_chunks(t, state.step, rank, world);
    for (size_t c = 0; c < chunks.size(); ++c) {
      const auto [first, count] = chunks[c];
      const auto batch = sample_batch(tokens, Split::train, config.seed, first, count, config.model.block_size);
      if (communicator && c + 1 == chunks.size()) communicator->arm();  // the gradients of this pass are summed
      AutocastGuard autocast(options.device);
      auto loss = model->loss(batch.inputs.to(options.device), batch.targets.to(options.device));
      const double weight = static_cast<double>(t.batch()) / static_cast<double>(count);
      (loss / weight).backward();
      const auto value = loss.detach().to(torch::kDouble) / weight;
      loss_sum = loss_sum.defined() ? loss_sum + value : value;
    }
    if (communicator) communicator->finish();
    // Every rank's loss and whether it was asked to stop, in one reduction: the ranks stay in step.
    int signal_seen = signals.received();
    if (communicator) {
      std::vector<torch::Tensor> shared{
          torch::stack({loss_sum, torch::full({}, static_cast<double>(signal_seen), loss_sum.options())})};
      communicator->all_reduce_sum(shared, "the loss all-reduce");
      loss_sum = shared[0][0];
      if (signal_seen == 0 && shared[0][1].item<double>() > 0) signal_seen = SIGTERM;
    }
    const double train_loss = loss_sum.item<double>();
    if (!std::isfinite(train_loss))
      throw NumericError("non-finite training loss at step " + std::to_string(state.step) + "; " + options.output +
                             " keeps the last good checkpoint (step " + std::to_string(state.step - state.step % t.checkpoint_interval) + " or earlier)",
                         "lower lr_peak or raise warmup");
    optimizer->clip_and_step(t.grad_clip);
    if (options.device.is_cuda()) torch::cuda::synchronize();
    const double step_seconds = seconds_since(step_start);
    ++state.step;
    ++steps_this_run;
    state.data_position = state.step * t.batch();
    state.tokens_seen += tokens_per_step;
    train_seconds += step_seconds;
    window_seconds += step_seconds;
    ++window_steps;
    state.curves.step.push_back(state.step);
    state.curves.train_loss.push_back(train_loss);
    state.curves.lr.push_back(lr);
    state.curves.tokens_per_second.push_back(static_cast<double>(tokens_per_step) / step_seconds);
    nlohmann::ordered_json record = {{"run", name},
                                     {"step", state.step},
                                     {"train_loss", finite(train_loss)},
                                     {"lr", lr},
                                     {"tokens_per_second", finite(static_cast<double>(tokens_per_step) / step_seconds)}};

    const bool last = state.step == t.iterations;
    const bool evaluate = state.step % t.eval_interval == 0 || last;
    double val = std::nan("");
    if (evaluate) {
      const auto eval_start = Clock::now();
      val = validation_loss(*model, tokens, config, t.eval_batches, options.device, communicator.get());
      eval_batch_seconds = seconds_since(eval_start) / static_cast<double>(t.eval_batches);
      state.curves.val_step.push_back(state.step);
      state.curves.val_loss.push_back(val);
      record["val_loss"] = finite(val);
    }
    write_json(record);
    const bool periodic = options.log_interval > 0 && seconds_since(last_line) >= options.log_interval;
    if (evaluate || periodic) {
      const double rate = static_cast<double>(window_steps * tokens_per_step) / window_seconds;
      std::ostringstream line;
      line.precision(4);
      line << std::fixed << prefix << "step " << state.step << "/" << t.iterations << "  loss " << train_loss;
      if (evaluate) line << "  val " << val;
      line << "  lr " << std::scientific << std::setprecision(2) << lr << std::fixed << std::setprecision(0) << "  "
           << rate << " tok/s  eta " << format_duration(eta(state.step));
      log::info(line.str());
      window_seconds = 0;
      window_steps = 0;
      last_line = Clock::now();
    }
    if (last) {
      state.final_val_loss = validation_loss(*model, tokens, config, t.final_eval_batches, options.device, communicator.get());
      state.finished = true;
      write_json({{"run", name}, {"step", state.step}, {"final_val_loss", finite(state.final_val_loss)}});
    }
    const bool stop = options.stop_after > 0 && steps_this_run >= options.stop_after;
    const int signal = signal_seen;
    if (communicator && (last || stop || signal)) check_same_weights(*model, *communicator, state.step);
    if (state.step % t.checkpoint_interval == 0 || last || stop || signal) save();
    if (signal && !state.finished)
      throw InterruptedError(std::string("stopped by ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT") + " at step " +
                                 std::to_string(state.step) + " of " + std::to_string(t.iterations) +
                                 "; the checkpoint of this step is in " + options.output,
                             "continue the run: sg-train --tokens " + options.token_file + " --resume -o " + options.output);
    if (stop) break;
  }
  TrainSummary summary;
  summary.steps = state.step;
  summary.final_val_loss = state.final_val_loss;
  summary.finished = state.finished;
  summary.seconds = seconds_since(start);
  summary.tokens_per_second =
      summary.seconds > 0 ? static_cast<double>((state.step - first_step) * tokens_per_step) / summary.seconds : 0;
  return summary;
}

}  // namespace sg
