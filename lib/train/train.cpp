// train.cpp — the training loop.
#include "lib/train/train.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <signal.h>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
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
#include "lib/train/telemetry.h"

namespace sg {
namespace {

using Clock = std::chrono::steady_clock;

/// The first SIGTERM or SIGINT asks the loop to checkpoint and stop; a second one stops at once.
volatile std::sig_atomic_t g_stop_signal = 0;
int g_stop_installed = 0;  // StopSignals alive (nested: sg-train's, then train()'s own)

extern "C" void on_stop_signal(int signal) {
  if (g_stop_signal != 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  g_stop_signal = signal;
}

}  // namespace

StopSignals::StopSignals() {
  if (g_stop_installed++ == 0) g_stop_signal = 0;  // a signal an outer instance caught is kept
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // file writes in progress are not interrupted
  sigaction(SIGTERM, &action, &old_term_);
  sigaction(SIGINT, &action, &old_int_);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGINT, &old_int_, nullptr);
  --g_stop_installed;
}

int StopSignals::received() const { return g_stop_signal; }

namespace {

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

/// The loss plan the run trains with (loss_tuning.h, resolve_run_loss_plan) from config.train.loss_plan;
/// `recorded` is the run file's plan on a resume. With a communicator, every rank takes rank 0's plan.
LossPlan fix_loss_plan(const RunConfig& config, const TrainOptions& options, const LossPlan& recorded,
                       Communicator* communicator, const std::string& prefix) {
  LossPlanRequest request;
  request.asked = config.train.loss_plan;
  request.cpu_bf16 = options.device.is_cpu() && config.train.precision == Precision::bf16;
  request.cpu_float32 = options.device.is_cpu() && !request.cpu_bf16;
  request.device = options.device.str();
  request.rows = config.train.micro_batch * config.model.block_size;
  request.width = config.model.n_embd;
  request.vocab = config.model.vocab_size;
  request.resume = options.resume;
  request.replaced = options.loss_plan.has_value();
  request.recorded = recorded;
  std::function<LossPlan(const LossPlan&)> agree;
  if (communicator)  // rank 0's plan everywhere: one arithmetic for every rank's share (the enums' values)
    agree = [&](const LossPlan& plan) {
      const int64_t kernel = plan.row_kernel ? static_cast<int64_t>(*plan.row_kernel) : -1;
      std::vector<torch::Tensor> numbers{torch::tensor({plan.chunk_rows, static_cast<int64_t>(plan.products), kernel},
                                                       torch::TensorOptions().dtype(torch::kLong))
                                             .to(options.device)};
      communicator->broadcast(numbers, "the broadcast of rank 0's loss plan");
      const auto values = numbers[0].to(torch::kCPU);
      const int64_t kernel_value = values[2].item<int64_t>();
      return LossPlan{values[0].item<int64_t>(), static_cast<LossProducts>(values[1].item<int64_t>()),
                      kernel_value < 0 ? std::nullopt : std::optional<RowKernel>(static_cast<RowKernel>(kernel_value))};
    };
  return resolve_run_loss_plan(request, prefix, agree);
}

/// The precision the run trains in: its recorded one, or for "auto" the device's. A new run gets
/// bf16 autocast on a GPU and on a CPU with bf16 matrix instructions (cpu_kernels.h: AVX512-BF16 or
/// AMX-BF16, not masked by SINKGATE_CPU_KERNELS), float32 on other CPUs. A resumed run file without
/// the field is of a version that knew no CPU bf16: float32 on a CPU, as it trained. bf16 asked on a
/// CPU without those instructions is refused (UsageError) rather than emulated at a fraction of
/// float32's speed.
Precision fix_precision(Precision asked, const TrainOptions& options) {
  const bool cpu_bf16_units = options.device.is_cpu() && !options.resume && cpu_bf16_missing().empty();
  const Precision precision = resolve_precision(asked, options.device.is_cuda() || cpu_bf16_units);
  if (uses_autocast(precision) && options.device.is_cpu()) {
    const std::string missing = cpu_bf16_missing();
    if (!missing.empty())
      throw UsageError("precision bf16 on the CPU needs bf16 matrix instructions (AVX512-BF16 or AMX-BF16), but " +
                           missing,
                       options.resume ? "this run trains in bf16 (recorded in its file): resume it on a CPU with "
                                        "AVX512-BF16 or AMX, or on a GPU"
                                      : "train in float32 (--precision float32, auto's choice on such a CPU), or on a GPU");
  }
  return precision;
}

/// The run's precision on the log, and where "auto" chose bf16 on a CPU, that it did.
void announce_precision(Precision precision, bool chosen, const TrainOptions& options, const std::string& prefix) {
  if (uses_autocast(precision) && options.device.is_cpu()) {
    const std::string what = "precision bf16: bf16 matrix products with float32 accumulation (" +
                             join(cpu_bf16_features(), ", ") +
                             "); float32 master weights, moments, gates, norms and softmax statistics";
    log::info(prefix + what + (chosen ? "; auto's choice on this CPU (--precision float32 trains in float32)" : ""));
  } else if (!uses_autocast(precision) && options.device.is_cuda()) {
    log::info(prefix + "precision float32 on " + options.device.str() + ": no autocast");
  }
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
  // On a GPU in the run's precision; on a CPU in float32 whatever the run's (as sg-eval scores it).
  AutocastGuard autocast(device, device.is_cuda() && uses_autocast(resolve_precision(config.train.precision, true)));
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

namespace {

/// A run being trained: its configuration and state, its place among the ranks, its output lock
/// and its name in progress lines. The first phase of train().
struct Session {
  RunConfig config;
  RunState state;
  LossPlan recorded_plan;  // the run file's loss plan, on a resume
  bool precision_chosen = false;  // "auto" resolved by this session (a new run), not recorded
  std::unique_ptr<Communicator> communicator;
  int64_t world = 1, rank = 0;
  bool writer = true;  // rank 0: the one that writes the run file
  std::unique_ptr<FileLock> lock;
  std::string name, prefix;  // "tier/arm/seed" (or the run's label), and "sg-train [NAME] "
};

/// Reads (on a resume) or starts the run's state, checks the token file against it, joins the
/// ranks and takes the output's lock: every check before the model is built.
Session open_session(const RunConfig& config_in, const TrainOptions& options, const TokenFile& tokens) {
  Session session;
  session.config = config_in;
  auto& config = session.config;
  auto& state = session.state;
  if (options.resume) {
    state = read_run_state(options.output);
    config = state.config;  // the run file's configuration wins, but for a new loss plan (a warning)
    session.recorded_plan = config.train.loss_plan;
    if (options.loss_plan) config.train.loss_plan = *options.loss_plan;
    if (state.finished) log::info("sg-train: " + options.output + " is already finished");
  } else {
    config.model.validate();
    config.train.validate();
    state.config = config;
    state.labels = options.labels;
  }
  session.precision_chosen = config.train.precision == Precision::automatic && !options.resume;
  config.train.precision = fix_precision(config.train.precision, options);  // before any output is touched
  state.config.train.precision = config.train.precision;
  check_vocabulary_fits(tokens, config.model, "the model");
  // Both splits must hold a window (block_size + 1 tokens): refused here, before the output exists,
  // not at the first batch after the step-0 checkpoint was written.
  for (const Split split : {Split::train, Split::val})
    if (tokens.size(split) <= config.model.block_size)
      throw InputError(tokens.path() + ": the " + to_string(split) + " split has " + std::to_string(tokens.size(split)) +
                           " tokens, not more than the context length " + std::to_string(config.model.block_size),
                       "use a larger corpus, a smaller validation split (sg-tokenize --val-tokens) or a shorter context");
  // Data parallelism: every rank trains; rank 0 alone writes (distributed.h).
  session.world = options.distributed.distributed() ? options.distributed.world_size : 1;
  session.rank = options.distributed.distributed() ? options.distributed.rank : 0;
  session.writer = session.rank == 0;
  rank_chunks(config.train, 0, 0, session.world);  // a batch that does not divide among the ranks fails here, before connecting
  if (options.distributed.distributed())
    session.communicator = Communicator::connect(options.distributed, options.device, options.timeout_seconds);
  // One writer per output, for the whole run (a second sg-train on the same -o fails at once). Taken
  // after the inputs are read, so that a missing run file or folder is reported as such; before the
  // first write.
  if (session.writer) session.lock = std::make_unique<FileLock>(options.output);
  // The token file's SHA-256, as the provenance block hashed it (hashing a large file twice costs).
  const std::string token_sha256 = options.provenance.sha256_of(options.token_file);
  if (options.resume)
    check_token_file(state, options.output, options.token_file, token_sha256, options.allow_other_tokens);
  state.token_file = options.token_file;
  state.token_file_hash = token_sha256;
  // The run decodes with the tokenizer of its token file (a run of an older version gains it here).
  if (!state.tokenizer.known()) state.tokenizer = tokens.info().tokenizer_record;
  session.name = options.name.empty() ? config.tier + "/" + config.model.arm.name() + "/" + std::to_string(config.seed)
                                      : options.name;
  for (const auto& [key, value] : state.labels)
    if (key == kRunKey && options.name.empty()) session.name = value;
  session.prefix = "sg-train [" + session.name + "] ";
  return session;
}

/// The model and its optimizer: built from the seed, or loaded from the run file on a resume;
/// with several ranks, rank 0's weights everywhere and the gradient hooks of the buckets.
GPT prepare_model(const Session& session, const TrainOptions& options,
                  std::unique_ptr<FusedAdamW>& optimizer) {
  GPT model = options.resume ? load_model(options.output, options.device)
                             : build_model(session.config.model, session.config.seed);
  model->to(options.device);
  model->train();
  optimizer = make_optimizer(*model, session.config.train);
  if (options.resume) load_optimizer(options.output, *model, *optimizer);
  if (session.communicator) {
    // The same weights everywhere: rank 0's (a seed gives the same weights on a CPU, not
    // necessarily on every GPU), then gradient hooks for the buckets.
    std::vector<torch::Tensor> parameters;
    for (const auto& p : model->parameters()) parameters.push_back(p);
    {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> data;
      for (const auto& p : parameters) data.push_back(p.data());
      session.communicator->broadcast(data, "the broadcast of rank 0's weights");
    }
    session.communicator->install_gradient_hooks(parameters);
  }
  return model;
}

/// The run's provenance with the value a field (loss_plan, precision) trains with in sg-train's
/// "key=value" lines, as /config names it, not the "auto" it was asked for: a resumed run's file
/// is then the uninterrupted one's, bit for bit.
Provenance with_field(Provenance provenance, const std::string& key, const std::string& value) {
  const std::string lead = key + "=";
  for (size_t line = 0; line < provenance.config.size();) {
    const size_t end = std::min(provenance.config.find('\n', line), provenance.config.size());
    if (provenance.config.compare(line, lead.size(), lead) == 0) {
      provenance.config.replace(line, end - line, lead + value);
      break;
    }
    line = end + 1;
  }
  return provenance;
}

/// --log-json: the curves as JSON Lines appended to a file, one line a step.
class JsonLog {
 public:
  explicit JsonLog(const std::string& path) : path_(path) {
    if (path.empty()) return;
    out_.open(path, std::ios::app);  // opens: the log it writes
    if (!out_) throw OutputError("cannot open " + path + " for the JSON log (--log-json)");
  }
  void write(const nlohmann::ordered_json& record) {
    if (!out_.is_open()) return;
    out_ << record.dump() << "\n" << std::flush;
    if (!out_) throw OutputError("cannot write the JSON log " + path_);
  }
  /// A number, or null for NaN and infinities (JSON has neither).
  static nlohmann::ordered_json number(double x) {
    return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
  }

 private:
  std::string path_;
  std::ofstream out_;
};

/// The progress lines: throughput since the last line, and the time left.
class Progress {
 public:
  Progress(const TrainConfig& train, int64_t tokens_per_step, double interval)
      : train_(train), tokens_per_step_(tokens_per_step), interval_(interval) {}

  void add_step(double seconds) {
    ++steps_;
    train_seconds_ += seconds;
    window_seconds_ += seconds;
    ++window_steps_;
  }
  void add_evaluation(double seconds) { eval_batch_seconds_ = seconds / static_cast<double>(train_.eval_batches); }
  int64_t steps() const { return steps_; }
  /// Whether a periodic line is due (evaluations always print one).
  bool due() const { return interval_ > 0 && seconds_since(last_line_) >= interval_; }

  /// Time left: the steps at this invocation's mean step time, plus the evaluation batches still
  /// to come (every eval_interval steps and at the last, then final_eval_batches) at the measured
  /// time of one (before the first evaluation: a third of a step, a forward pass's share).
  double eta(int64_t step, bool finished) const {
    const auto& t = train_;
    const double per_step = steps_ > 0 ? train_seconds_ / static_cast<double>(steps_) : 0;
    const int64_t evals = t.iterations / t.eval_interval - step / t.eval_interval +
                          (t.iterations % t.eval_interval != 0 && step < t.iterations ? 1 : 0);
    const double per_eval_batch = eval_batch_seconds_ >= 0 ? eval_batch_seconds_ : per_step / 3;
    const int64_t eval_batches = evals * t.eval_batches + (finished ? 0 : t.final_eval_batches);
    return static_cast<double>(t.iterations - step) * per_step + static_cast<double>(eval_batches) * per_eval_batch;
  }

  /// "PREFIX step S/N  loss L  [val V]  lr R  T tok/s  eta H:MM:SS", then a new window.
  std::string line(const std::string& prefix, int64_t step, double train_loss, bool evaluated, double val, double lr,
                   bool finished) {
    const double rate = static_cast<double>(window_steps_ * tokens_per_step_) / window_seconds_;
    std::ostringstream out;
    out.precision(4);
    out << std::fixed << prefix << "step " << step << "/" << train_.iterations << "  loss " << train_loss;
    if (evaluated) out << "  val " << val;
    out << "  lr " << std::scientific << std::setprecision(2) << lr << std::fixed << std::setprecision(0) << "  "
        << rate << " tok/s  eta " << format_duration(eta(step, finished));
    window_seconds_ = 0;
    window_steps_ = 0;
    last_line_ = Clock::now();
    return out.str();
  }

 private:
  const TrainConfig& train_;
  int64_t tokens_per_step_;
  double interval_;
  int64_t steps_ = 0;
  double train_seconds_ = 0;       // optimizer steps of this invocation, evaluations excluded
  double window_seconds_ = 0;      // since the last progress line
  int64_t window_steps_ = 0;
  double eval_batch_seconds_ = -1;  // measured at the first evaluation
  Clock::time_point last_line_ = Clock::now();
};

/// The forward and backward passes of one optimizer step over this rank's windows; returns the
/// step's mean loss (over every rank) and the stop signal any rank received (0: none). The
/// gradients are left for the optimizer. With a `recorder` (a step the telemetry measures), it
/// holds this rank's largest attention logit and residual activation of the step.
std::pair<double, int> forward_backward(GPTImpl& model, const Session& session, const TokenFile& tokens,
                                        const TrainOptions& options, const StopSignals& signals,
                                        StepMaximaRecorder* recorder) {
  const auto& config = session.config;
  const auto& t = config.train;
  const int64_t step = session.state.step;
  // Summed on the device and read once per step: a read per micro-batch would make the host
  // wait for the GPU instead of queueing the next micro-batch's kernels.
  // This rank's windows of the step (all of them in one process), each chunk's mean loss
  // weighted by its share of the batch; in one process each weight is 1/accumulation exactly.
  torch::Tensor loss_sum;
  // The step's largest attention logit and residual activation, over its micro-batches.
  struct ObserverScope {
    GPTImpl& model;
    ObserverScope(GPTImpl& m, StepMaximaRecorder* recorder) : model(m) {
      if (recorder) recorder->reset();
      model.set_observer(recorder);
    }
    ~ObserverScope() { model.set_observer(nullptr); }
  } observer_scope(model, recorder);
  const auto chunks = rank_chunks(t, step, session.rank, session.world);
  for (size_t c = 0; c < chunks.size(); ++c) {
    const auto [first, count] = chunks[c];
    const auto batch = sample_batch(tokens, Split::train, config.seed, first, count, config.model.block_size);
    if (session.communicator && c + 1 == chunks.size()) session.communicator->arm();  // the gradients of this pass are summed
    AutocastGuard autocast(options.device, uses_autocast(config.train.precision));
    auto loss = model.loss(batch.inputs.to(options.device), batch.targets.to(options.device));
    const double weight = static_cast<double>(t.batch()) / static_cast<double>(count);
    (loss / weight).backward();
    const auto value = loss.detach().to(torch::kDouble) / weight;
    loss_sum = loss_sum.defined() ? loss_sum + value : value;
  }
  if (session.communicator) session.communicator->finish();
  // Every rank's loss and whether it was asked to stop, in one reduction: the ranks stay in step.
  int signal_seen = signals.received();
  if (session.communicator) {
    std::vector<torch::Tensor> shared{
        torch::stack({loss_sum, torch::full({}, static_cast<double>(signal_seen), loss_sum.options())})};
    session.communicator->all_reduce_sum(shared, "the loss all-reduce");
    loss_sum = shared[0][0];
    if (signal_seen == 0 && shared[0][1].item<double>() > 0) signal_seen = SIGTERM;
  }
  return {loss_sum.item<double>(), signal_seen};
}

/// The run's first line: its size, its batch and the steps to go.
void announce(const Session& session, const TrainOptions& options, int64_t parameters, int64_t tokens_per_step) {
  const auto& config = session.config;
  const auto& t = config.train;
  std::ostringstream line;
  line << session.prefix << parameters << " parameters, " << tokens_per_step << " tokens a step (" << t.micro_batch
       << " x " << t.accumulation << " sequences of " << config.model.block_size << "), "
       << t.iterations - session.state.step << " steps to go";
  if (session.communicator)
    line << "; " << session.world << " ranks (" << options.distributed.launcher << "), " << t.batch() / session.world
         << " sequences each a step";
  log::info(line.str());
}

/// The step's gradient norm (before clipping), largest attention logit and residual activation.
struct StepMaxima {
  double grad_norm = std::nan(""), attention_logit = std::nan(""), activation = std::nan("");
};

/// The step's gradient norm and, from a `recorder` (a step the telemetry measures), its maxima,
/// read from the device in one copy: with several ranks, the largest of every rank's maxima.
StepMaxima read_maxima(const StepMaximaRecorder* recorder, const torch::Tensor& grad_norm, Communicator* communicator) {
  if (!recorder) return {grad_norm.defined() ? grad_norm.item<double>() : std::nan("")};
  const auto device = recorder->activation().defined() ? recorder->activation().device() : torch::Device(torch::kCPU);
  auto value = [&](const torch::Tensor& t) {
    return t.defined() ? t.to(device, torch::kDouble).reshape({1}) : torch::full({1}, std::nan(""), torch::TensorOptions(torch::kDouble).device(device));
  };
  const auto read = torch::cat({value(grad_norm), value(recorder->attention_logit()), value(recorder->activation())}).cpu();
  const double norm = read[0].item<double>();
  auto values = read.narrow(0, 1, 2);
  if (communicator) {
    // A maximum through the communicator's sum: each rank's pair in its own row of a zero table,
    // summed over the ranks, then the largest of each column.
    const int64_t world = communicator->world_size(), rank = communicator->rank();
    auto slots = torch::zeros({world, 2}, torch::kDouble);
    slots[rank] = values;
    std::vector<torch::Tensor> shared{slots.to(device)};
    communicator->all_reduce_sum(shared, "the step maxima all-reduce");
    values = std::get<0>(shared[0].cpu().max(0));
  }
  return {norm, values[0].item<double>(), values[1].item<double>()};
}

/// Counts a finished step in the run's state and curves; returns its record for --log-json.
nlohmann::ordered_json record_step(Session& session, int64_t tokens_per_step, double train_loss, double lr,
                                   double step_seconds, const StepMaxima& maxima) {
  auto& state = session.state;
  ++state.step;
  state.data_position = state.step * session.config.train.batch();
  state.tokens_seen += tokens_per_step;
  const double speed = static_cast<double>(tokens_per_step) / step_seconds;
  state.curves.step.push_back(state.step);
  state.curves.train_loss.push_back(train_loss);
  state.curves.lr.push_back(lr);
  state.curves.tokens_per_second.push_back(speed);
  state.curves.grad_norm.push_back(maxima.grad_norm);
  state.curves.max_attention_logit.push_back(maxima.attention_logit);
  state.curves.max_activation.push_back(maxima.activation);
  return {{"run", session.name},
          {"step", state.step},
          {"train_loss", JsonLog::number(train_loss)},
          {"lr", lr},
          {"tokens_per_second", JsonLog::number(speed)},
          {"grad_norm", JsonLog::number(maxima.grad_norm)},
          {"max_attention_logit", JsonLog::number(maxima.attention_logit)},
          {"max_activation", JsonLog::number(maxima.activation)}};
}

/// The validation loss after a step (eval_batches), in the curves, the progress and the record.
double evaluate_step(GPTImpl& model, Session& session, const TokenFile& tokens, const TrainOptions& options,
                     Progress& progress, nlohmann::ordered_json& record) {
  auto& state = session.state;
  const auto eval_start = Clock::now();
  const double val = validation_loss(model, tokens, session.config, session.config.train.eval_batches, options.device,
                                     session.communicator.get());
  progress.add_evaluation(seconds_since(eval_start));
  state.curves.val_step.push_back(state.step);
  state.curves.val_loss.push_back(val);
  record["val_loss"] = JsonLog::number(val);
  return val;
}

/// The error of a run stopped by SIGTERM or SIGINT after the checkpoint of its step.
[[noreturn]] void interrupted(int signal, const RunState& state, int64_t iterations, const TrainOptions& options) {
  throw InterruptedError(std::string("stopped by ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT") + " at step " +
                             std::to_string(state.step) + " of " + std::to_string(iterations) +
                             "; the checkpoint of this step is in " + options.output,
                         "continue the run: sg-train --tokens " + options.token_file + " --resume -o " + options.output);
}

/// Fixes the run's loss plan (in its configuration, its state and its model) and returns the
/// provenance its checkpoints carry: the plan and the precision as /config names them, and the
/// arithmetic (device, threads, precision, plan, processes).
Provenance fix_arithmetic(Session& session, const TrainOptions& options, GPTImpl& model) {
  auto& config = session.config;
  Communicator* communicator = session.communicator.get();
  const LossPlan loss_plan = fix_loss_plan(config, options, session.recorded_plan, communicator, session.prefix);
  config.train.loss_plan = loss_plan;
  session.state.config.train.loss_plan = loss_plan;
  model.set_loss_plan(loss_plan);
  Provenance provenance = with_field(with_field(options.provenance, "loss_plan", loss_plan_text(loss_plan)),
                                     "precision", to_string(config.train.precision));
  provenance.arithmetic = arithmetic_text(options.device) + "; " + to_string(config.train.precision) + "; loss plan " +
                          loss_plan_text(loss_plan) +
                          (communicator ? "; " + std::to_string(communicator->world_size()) + " processes" : "");
  return provenance;
}

/// A non-finite training loss is NumericError unless --on-nonfinite stop.
void check_nonfinite_allowed(const RunState& state, const TrainOptions& options, int64_t checkpoint_interval) {
  if (options.stop_on_nonfinite) return;
  throw NumericError("non-finite training loss at step " + std::to_string(state.step) + "; " + options.output +
                         " keeps the last good checkpoint (step " +
                         std::to_string(state.step - state.step % checkpoint_interval) + " or earlier)",
                     "lower lr_peak or raise warmup, or --on-nonfinite stop to keep the diverged run's curves");
}

TrainSummary summarize(const RunState& state, bool nonfinite, double seconds, int64_t tokens_trained) {
  TrainSummary summary;
  summary.steps = state.step;
  summary.final_val_loss = state.final_val_loss;
  summary.finished = state.finished;
  summary.nonfinite = nonfinite;
  summary.seconds = seconds;
  summary.tokens_per_second = seconds > 0 ? static_cast<double>(tokens_trained) / seconds : 0;
  return summary;
}

}  // namespace

TrainSummary train(const RunConfig& config_in, const TrainOptions& options) {
  const auto tokens = TokenFile::open(options.token_file);
  Session session = open_session(config_in, options, tokens);
  auto& config = session.config;
  auto& state = session.state;
  Communicator* communicator = session.communicator.get();
  const std::string& prefix = session.prefix;
  std::unique_ptr<FusedAdamW> optimizer;
  GPT model = prepare_model(session, options, optimizer);

  const auto& t = config.train;
  const int64_t tokens_per_step = t.batch() * config.model.block_size;
  announce(session, options, model->parameter_count(), tokens_per_step);
  announce_precision(config.train.precision, session.precision_chosen, options, prefix);
  const Provenance provenance = fix_arithmetic(session, options, *model);
  // Rank 0 writes; every rank waits for the file, so that none runs ahead of a checkpoint.
  auto save = [&] {
    if (session.writer) save_run(options.output, /*force=*/true, *model, optimizer.get(), state, provenance);
    if (communicator) communicator->barrier("the barrier after a checkpoint");
  };
  if (!options.resume) {
    if (session.writer) h5::check_writable(options.output, options.force);
    save();  // an initial checkpoint: the output exists and is valid from the start
  }

  JsonLog json(options.log_json);
  StopSignals signals;
  const auto start = Clock::now();
  const int64_t first_step = state.step;
  Progress progress(t, tokens_per_step, options.log_interval);
  StepMaximaRecorder maxima;
  bool nonfinite = false;
  while (state.step < t.iterations && !state.finished) {
    const auto step_start = Clock::now();
    const double lr = learning_rate(t, state.step);
    set_learning_rate(*optimizer, lr);
    optimizer->zero_grad();
    StepMaximaRecorder* recorder = telemetry_measures(t.telemetry, state.step + 1) ? &maxima : nullptr;
    const auto [train_loss, signal] = forward_backward(*model, session, tokens, options, signals, recorder);
    if (!std::isfinite(train_loss)) {
      // --on-nonfinite stop: the step is recorded with its loss and no update, and the run stops there.
      check_nonfinite_allowed(state, options, t.checkpoint_interval);
      const StepMaxima step_maxima = read_maxima(recorder, torch::Tensor(), communicator);
      json.write(record_step(session, tokens_per_step, train_loss, lr, seconds_since(step_start), step_maxima));
      log::warn(prefix + "non-finite training loss at step " + std::to_string(state.step) +
                "; the run stops there, unfinished (--on-nonfinite stop), its curves in " + options.output);
      save();
      nonfinite = true;
      break;
    }
    const auto grad_norm = optimizer->clip_and_step(t.grad_clip);
    const StepMaxima step_maxima = read_maxima(recorder, grad_norm, communicator);
    if (options.device.is_cuda()) torch::cuda::synchronize();
    const double step_seconds = seconds_since(step_start);
    progress.add_step(step_seconds);
    auto record = record_step(session, tokens_per_step, train_loss, lr, step_seconds, step_maxima);

    const bool last = state.step == t.iterations;
    const bool evaluate = state.step % t.eval_interval == 0 || last;
    const double val = evaluate ? evaluate_step(*model, session, tokens, options, progress, record) : std::nan("");
    json.write(record);
    if (evaluate || progress.due()) log::info(progress.line(prefix, state.step, train_loss, evaluate, val, lr, state.finished));
    if (last) {
      state.final_val_loss = validation_loss(*model, tokens, config, t.final_eval_batches, options.device, communicator);
      state.finished = true;
      json.write({{"run", session.name}, {"step", state.step}, {"final_val_loss", JsonLog::number(state.final_val_loss)}});
    }
    const bool stop = options.stop_after > 0 && progress.steps() >= options.stop_after;
    if (communicator && (last || stop || signal)) check_same_weights(*model, *communicator, state.step);
    if (state.step % t.checkpoint_interval == 0 || last || stop || signal) save();
    if (signal && !state.finished) interrupted(signal, state, t.iterations, options);
    if (stop) break;
  }
  return summarize(state, nonfinite, seconds_since(start), (state.step - first_step) * tokens_per_step);
}

}  // namespace sg
