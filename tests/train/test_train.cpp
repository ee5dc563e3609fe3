// Tests of lib/train/train and lib/model/checkpoint: exact resume, determinism, learning, run files.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <unistd.h>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/kernels/cpu_kernels.h"
#include "lib/model/checkpoint.h"
#include "lib/text/corpus.h"
#include "lib/text/token_file.h"
#include "lib/train/train.h"
#include "tests/support.h"

namespace {

std::string temp_name(const std::string& stem) { return stem + "." + std::to_string(::getpid()) + ".h5"; }

/// Random tokens below `vocab` (a fixed generator), `val` of them in the validation split.
std::string synthetic_tokens(const std::string& stem, int64_t vocab, int64_t total, int64_t val, uint64_t seed = 1) {
  const auto path = temp_name(stem);
  sg::TokenWriter writer(path, true, val, "test", vocab, vocab - 1);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto ids = torch::randint(vocab - 1, {total - 1}, generator, torch::kLong);
  writer.add_document(std::vector<int32_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel()));
  writer.commit();
  return path;
}

sg::RunConfig small_run(const std::string& arm, int64_t vocab) {
  auto config = sg::make_run_config("tiny", arm, 3);
  sg::apply_overrides(config, {"n_embd=32", "n_head=2", "block_size=16", "vocab_size=" + std::to_string(vocab),
                               "micro_batch=4", "iterations=12", "warmup=3", "eval_interval=4", "eval_batches=2",
                               "final_eval_batches=3", "checkpoint_interval=5", "precision=float32"});
  return config;
}

sg::TrainOptions options_for(const std::string& tokens, const std::string& output) {
  sg::TrainOptions options;
  options.token_file = tokens;
  options.output = output;
  options.force = true;
  options.provenance.tool = "test_train";
  return options;
}

std::vector<torch::Tensor> weights_of(const std::string& run) {
  auto model = sg::load_model(run, torch::kCPU);
  std::vector<torch::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("a run stopped at step k and resumed ends bitwise identical to an uninterrupted run") {
  sg::log::set_level("quiet");
  const auto tokens = synthetic_tokens("test_train_resume_tokens", 61, 4000, 500);
  for (const char* arm : {"combo2", "sinktoken"}) {
    INFO(arm);
    const auto config = small_run(arm, 61);
    const auto whole = temp_name("test_train_whole"), parts = temp_name("test_train_parts");
    sg::train(config, options_for(tokens, whole));
    auto first = options_for(tokens, parts);
    first.stop_after = 7;  // between checkpoints: the stop writes its own
    const auto stopped = sg::train(config, first);
    CHECK_FALSE(stopped.finished);
    CHECK(sg::read_run_state(parts).step == 7);
    auto second = options_for(tokens, parts);
    second.resume = true;
    second.force = false;
    const auto resumed = sg::train(config, second);
    CHECK(resumed.finished);
    const auto a = sg::read_run_state(whole), b = sg::read_run_state(parts);
    CHECK(a.curves.train_loss == b.curves.train_loss);  // bitwise: exact double equality
    CHECK(a.curves.val_loss == b.curves.val_loss);
    CHECK(a.final_val_loss == b.final_val_loss);
    CHECK(a.data_position == b.data_position);
    const auto wa = weights_of(whole), wb = weights_of(parts);
    for (size_t i = 0; i < wa.size(); ++i) CHECK(torch::equal(wa[i], wb[i]));
    std::remove(whole.c_str());
    std::remove(parts.c_str());
  }
  std::remove(tokens.c_str());
}

namespace {

bool same_weights(const std::string& a, const std::string& b) {
  const auto wa = weights_of(a), wb = weights_of(b);
  for (size_t i = 0; i < wa.size(); ++i)
    if (!torch::equal(wa[i], wb[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("a resume keeps the run's recorded loss plan whatever the environment says, and ends bitwise identical") {
  sg::log::set_level("quiet");
  const auto tokens = synthetic_tokens("test_train_plan_tokens", 61, 4000, 500);
  const auto config = small_run("combo2", 61);  // a micro-batch's loss: 4 x 16 = 64 rows
  const auto whole = temp_name("test_train_plan_whole"), parts = temp_name("test_train_plan_parts"),
             replaced = temp_name("test_train_plan_replaced"), old = temp_name("test_train_plan_old");
  sg_test::ScopedEnv products("SINKGATE_LOSS_PRODUCTS", "plain");
  std::string plan;
  {
    // The machine's choice when the run starts: chunks of 16 rows.
    sg_test::ScopedEnv chunk("SINKGATE_LOSS_CHUNK_ROWS", "16");
    sg::train(config, options_for(tokens, whole));
    plan = sg::loss_plan_text(sg::read_run_state(whole).config.train.loss_plan);
    CHECK_THAT(plan, Catch::StartsWith("16:plain:"));
    for (const auto& path : {parts, replaced}) {
      auto first = options_for(tokens, path);
      first.stop_after = 7;
      sg::train(config, first);
      CHECK(sg::loss_plan_text(sg::read_run_state(path).config.train.loss_plan) == plan);
    }
  }
  // Resumed where the environment (another machine, a cleared cache) would choose chunks of all
  // 64 rows: the run keeps its 16 and ends as if it had never stopped.
  sg_test::ScopedEnv chunk("SINKGATE_LOSS_CHUNK_ROWS", "64");
  auto second = options_for(tokens, parts);
  second.resume = true;
  second.force = false;
  sg::train(config, second);
  const auto a = sg::read_run_state(whole), b = sg::read_run_state(parts);
  CHECK(b.finished);
  CHECK(sg::loss_plan_text(b.config.train.loss_plan) == plan);
  CHECK(a.curves.train_loss == b.curves.train_loss);
  CHECK(a.final_val_loss == b.final_val_loss);
  CHECK(same_weights(whole, parts));
  // The environment's plan does change the bits: replacing the plan (--set loss_plan on resume)
  // ends elsewhere, and records the new plan. (This is what the resume above would give if it
  // took the environment's plan.)
  auto other = options_for(tokens, replaced);
  other.resume = true;
  other.force = false;
  other.loss_plan = sg::parse_loss_plan("64:plain");
  sg::train(config, other);
  CHECK_THAT(sg::loss_plan_text(sg::read_run_state(replaced).config.train.loss_plan), Catch::StartsWith("64:plain:"));
  CHECK_FALSE(same_weights(whole, replaced));
  // A run file of an older version records no plan (read as auto): its resume fixes one as the
  // machine chooses (here 64 rows) and records it.
  sg::RunState state;
  state.config = config;
  REQUIRE(state.config.train.loss_plan.automatic());
  sg::save_run(old, /*force=*/true, *sg::build_model(config.model, config.seed), nullptr, state, sg::Provenance{});
  auto resume_old = options_for(tokens, old);
  resume_old.resume = true;
  resume_old.force = false;
  sg::train(config, resume_old);
  CHECK_THAT(sg::loss_plan_text(sg::read_run_state(old).config.train.loss_plan), Catch::StartsWith("64:plain:"));
  for (const auto& path : {whole, parts, replaced, old}) std::remove(path.c_str());
  std::remove(tokens.c_str());
}

TEST_CASE("a bf16 run on the CPU records its precision and resumes bitwise, without bf16 instructions it is refused") {
  sg::log::set_level("quiet");
  const auto tokens = synthetic_tokens("test_train_bf16_tokens", 61, 4000, 500);
  auto config = small_run("combo2", 61);
  config.train.precision = sg::Precision::bf16;
  const auto whole = temp_name("test_train_bf16_whole"), parts = temp_name("test_train_bf16_parts"),
             fp32 = temp_name("test_train_bf16_fp32");
  // Masked (SINKGATE_CPU_KERNELS=avx2), or on a CPU without them: refused before any output exists.
  sg::limit_cpu_kernels_to_avx2(true);
  CHECK_THROWS_WITH(sg::train(config, options_for(tokens, whole)),
                    Catch::Contains("precision bf16 on the CPU needs bf16 matrix instructions") &&
                        Catch::Contains("capped at AVX2"));
  sg::limit_cpu_kernels_to_avx2(false);
  CHECK(::access(whole.c_str(), F_OK) != 0);
  if (sg::cpu_bf16_features().empty()) {
    CHECK_THROWS_WITH(sg::train(config, options_for(tokens, whole)), Catch::Contains("has neither AVX512-BF16 nor AMX-BF16"));
    WARN("this CPU has no bf16 instructions: the bf16 run's resume is not tested here");
    std::remove(tokens.c_str());
    return;
  }
  sg::train(config, options_for(tokens, whole));
  auto first = options_for(tokens, parts);
  first.stop_after = 7;
  sg::train(config, first);
  auto second = options_for(tokens, parts);
  second.resume = true;
  second.force = false;
  sg::train(config, second);
  const auto a = sg::read_run_state(whole), b = sg::read_run_state(parts);
  CHECK(a.config.train.precision == sg::Precision::bf16);
  CHECK(b.config.train.precision == sg::Precision::bf16);
  CHECK_THAT(sg::loss_plan_text(a.config.train.loss_plan), Catch::Contains(":bf16:") || Catch::Contains(":avx512:"));
  CHECK(b.finished);
  CHECK(a.curves.train_loss == b.curves.train_loss);  // bitwise
  CHECK(a.curves.val_loss == b.curves.val_loss);
  CHECK(a.final_val_loss == b.final_val_loss);
  CHECK(same_weights(whole, parts));
  // The master weights stay float32, and bf16 did run: a float32 run (recorded as such) ends
  // elsewhere, though near.
  auto float_config = config;
  float_config.train.precision = sg::Precision::float32;
  sg::train(float_config, options_for(tokens, fp32));
  const auto c = sg::read_run_state(fp32);
  CHECK(c.config.train.precision == sg::Precision::float32);
  for (const auto& w : weights_of(whole)) CHECK(w.scalar_type() == torch::kFloat);
  CHECK_FALSE(same_weights(whole, fp32));
  CHECK(std::abs(a.final_val_loss - c.final_val_loss) < 0.05 * c.final_val_loss);
  for (const auto& path : {whole, parts, fp32}) std::remove(path.c_str());
  std::remove(tokens.c_str());
}

TEST_CASE("the same configuration twice gives identical results, arms share the batches") {
  sg::log::set_level("quiet");
  const auto tokens = synthetic_tokens("test_train_determinism_tokens", 61, 3000, 400);
  const auto config = small_run("normgate", 61);
  const auto a = temp_name("test_train_a"), b = temp_name("test_train_b");
  sg::train(config, options_for(tokens, a));
  sg::train(config, options_for(tokens, b));
  CHECK(sg::read_run_state(a).curves.train_loss == sg::read_run_state(b).curves.train_loss);
  // Pairing: two arms with one seed draw identical training batches at every step; another seed differs.
  const auto token_file = sg::TokenFile::open(tokens);
  auto other_arm = small_run("projgate", 61);
  auto other_seed = small_run("normgate", 61);
  other_seed.seed = 4;
  for (int64_t step = 0; step < 5; ++step) {
    const auto x = sg::training_batch(token_file, config, step, 0).inputs;
    CHECK(torch::equal(x, sg::training_batch(token_file, other_arm, step, 0).inputs));
    CHECK_FALSE(torch::equal(x, sg::training_batch(token_file, other_seed, step, 0).inputs));
  }
  std::remove(a.c_str());
  std::remove(b.c_str());
  std::remove(tokens.c_str());
}

namespace {

/// The float64 reference of one micro-batch, written from the paper's architecture alone (App. A),
/// not from lib/model: the mean loss, the largest causal logit q_i.k_j/sqrt(d) over every layer,
/// head and sequence, and the largest |x| of the residual stream (the embeddings with the sink
/// token, every block's output). `p` holds the model's parameters by name, float64.
struct ReferencePass {
  torch::Tensor loss;
  double largest_logit = -INFINITY, largest_activation = 0;
};

ReferencePass reference_pass(std::map<std::string, torch::Tensor>& p, const sg::ModelConfig& m,
                             const torch::Tensor& idx, const torch::Tensor& targets) {
  namespace F = torch::nn::functional;
  const int64_t batch = idx.size(0), length = idx.size(1), c = m.n_embd, h = m.n_head, d = c / h;
  auto norm = [&](const torch::Tensor& x, const std::string& name) {
    return F::layer_norm(x, F::LayerNormFuncOptions({c}).weight(p[name + ".weight"]).bias(p[name + ".bias"]).eps(1e-5));
  };
  ReferencePass out;
  auto x = p["wte.weight"].index_select(0, idx.reshape({-1})).view({batch, length, c}) +
           p["wpe.weight"].narrow(0, 0, length).unsqueeze(0);
  const bool sink = p.count("sink_token") > 0;
  if (sink) x = torch::cat({p["sink_token"].view({1, 1, c}).expand({batch, 1, c}), x}, 1);
  const int64_t t = x.size(1);
  out.largest_activation = x.abs().max().item<double>();
  const auto future = torch::ones({t, t}, torch::kBool).triu(1);
  for (int64_t layer = 0; layer < m.n_layer; ++layer) {
    const std::string b = "blocks." + std::to_string(layer) + ".";
    const auto qkv = torch::matmul(norm(x, b + "ln_1"), p[b + "attn.c_attn.weight"].t());  // (B, T, 3C)
    auto heads = [&](int64_t part) { return qkv.narrow(2, part * c, c).view({batch, t, h, d}).transpose(1, 2); };
    const auto q = heads(0), k = heads(1), v = heads(2);
    const auto logits = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));  // (B, H, T, T)
    out.largest_logit = std::max(out.largest_logit, logits.detach().masked_fill(future, -INFINITY).max().item<double>());
    const auto y = torch::matmul(torch::softmax(logits.masked_fill(future, -INFINITY), -1), v);
    x = x + torch::matmul(y.transpose(1, 2).reshape({batch, t, c}), p[b + "attn.c_proj.weight"].t());
    const auto hidden = F::gelu(torch::matmul(norm(x, b + "ln_2"), p[b + "mlp.c_fc.weight"].t()));
    x = x + torch::matmul(hidden, p[b + "mlp.c_proj.weight"].t());
    out.largest_activation = std::max(out.largest_activation, x.detach().abs().max().item<double>());
  }
  if (sink) x = x.narrow(1, 1, length);
  const auto logits = torch::matmul(norm(x, "ln_f"), p["wte.weight"].t());  // (B, T, V)
  out.loss = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
  return out;
}

}  // namespace

TEST_CASE("a step's curves hold its gradient norm before clipping, largest attention logit and residual activation, as float64 computes them") {
  sg::log::set_level("quiet");
  const auto tokens = synthetic_tokens("test_train_maxima_tokens", 61, 3000, 400);
  const auto token_file = sg::TokenFile::open(tokens);
  for (const char* arm : {"baseline", "sinktoken"}) {
    INFO(arm);
    auto config = small_run(arm, 61);
    // Two micro-batches a step: the step's maxima span both; a large rate so that step 2 differs.
    sg::apply_overrides(config, {"micro_batch=2", "accumulation=2", "iterations=2", "warmup=1", "eval_interval=2",
                                 "checkpoint_interval=2", "telemetry=1"});
    const auto run = temp_name("test_train_maxima_run");
    sg::train(config, options_for(tokens, run));
    const auto curves = sg::read_run_state(run).curves;
    REQUIRE(curves.grad_norm.size() == 2);
    REQUIRE(curves.max_attention_logit.size() == 2);
    REQUIRE(curves.max_activation.size() == 2);

    // Step 1 from the seed's initial weights, in float64.
    auto model = sg::build_model(config.model, config.seed);
    std::map<std::string, torch::Tensor> parameters;
    for (const auto& item : model->named_parameters())
      parameters[item.key()] = item.value().detach().to(torch::kDouble).clone().requires_grad_(true);
    double logit = -INFINITY, activation = 0;
    for (int64_t micro = 0; micro < 2; ++micro) {
      const auto batch = sg::training_batch(token_file, config, 0, micro);
      const auto pass = reference_pass(parameters, config.model, batch.inputs, batch.targets);
      (pass.loss / 2).backward();  // the step's loss is the mean over its two micro-batches
      logit = std::max(logit, pass.largest_logit);
      activation = std::max(activation, pass.largest_activation);
    }
    double squares = 0;
    for (auto& [name, value] : parameters) squares += value.grad().pow(2).sum().item<double>();
    const double grad_norm = std::sqrt(squares);
    INFO("grad norm " << curves.grad_norm[0] << " vs " << grad_norm << "; logit " << curves.max_attention_logit[0]
                      << " vs " << logit << "; activation " << curves.max_activation[0] << " vs " << activation);
    CHECK(curves.grad_norm[0] == Approx(grad_norm).epsilon(1e-4));
    CHECK(curves.max_attention_logit[0] == Approx(logit).epsilon(1e-4));
    CHECK(curves.max_activation[0] == Approx(activation).epsilon(1e-5));
    CHECK(grad_norm > 0);
    // Step 2 ran on other weights: its numbers are its own, not the first step's carried over.
    CHECK(curves.max_attention_logit[1] != curves.max_attention_logit[0]);
    CHECK(curves.grad_norm[1] != curves.grad_norm[0]);
    std::remove(run.c_str());
  }
  std::remove(tokens.c_str());
}

TEST_CASE("telemetry is off by default and records no maxima, telemetry=2 measures every second step, and neither changes the training") {
  sg::log::set_level("quiet");
  const auto tokens = synthetic_tokens("test_train_telemetry_tokens", 62, 3000, 400);
  auto curves_of = [&](const std::string& telemetry) {
    auto config = small_run("baseline", 62);
    sg::apply_overrides(config, {"iterations=4", "warmup=1", "eval_interval=4", "checkpoint_interval=4"});
    if (!telemetry.empty()) sg::apply_overrides(config, {"telemetry=" + telemetry});
    const auto run = temp_name("test_train_telemetry_run");
    sg::train(config, options_for(tokens, run));
    const auto state = sg::read_run_state(run);
    std::remove(run.c_str());
    CHECK(state.config.train.telemetry == (telemetry.empty() ? 0 : std::stoll(telemetry)));
    return state.curves;
  };
  const auto off = curves_of(""), every_second = curves_of("2");
  REQUIRE(off.step.size() == 4);
  REQUIRE(every_second.step.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO("step " << off.step[i]);
    CHECK(std::isnan(off.max_attention_logit[i]));
    CHECK(std::isnan(off.max_activation[i]));
    CHECK(std::isfinite(off.grad_norm[i]));
    const bool measured = every_second.step[i] % 2 == 0;
    CHECK(std::isfinite(every_second.max_attention_logit[i]) == measured);
    CHECK(std::isfinite(every_second.max_activation[i]) == measured);
    // The observer only reads: the same losses and gradient norms, bit for bit.
    CHECK(off.train_loss[i] == every_second.train_loss[i]);
    CHECK(off.grad_norm[i] == every_second.grad_norm[i]);
  }
  std::remove(tokens.c_str());
}

TEST_CASE("a model trained on one batch overfits it to near-zero loss") {
  sg::log::set_level("quiet");
  // A training split of exactly context + 1 tokens: every window is the same.
  const auto path = temp_name("test_train_overfit_tokens");
  {
    sg::TokenWriter writer(path, true, 40, "test", 50, 49);
    std::vector<int32_t> ids;
    for (int i = 0; i < 40 + 16; ++i) ids.push_back((i * 17 + 3) % 49);
    writer.add_document(ids);  // + end-of-text: the training split has 17 tokens
    writer.commit();
  }
  auto config = small_run("combo2", 50);
  sg::apply_overrides(config, {"iterations=150", "warmup=5", "lr_peak=3e-3", "lr_min=3e-3", "eval_interval=150",
                               "checkpoint_interval=150"});
  const auto run = temp_name("test_train_overfit_run");
  sg::train(config, options_for(path, run));
  const auto state = sg::read_run_state(run);
  CHECK(state.curves.train_loss.front() > 3.0);
  CHECK(state.curves.train_loss.back() < 0.05);
  std::remove(path.c_str());
  std::remove(run.c_str());
}

TEST_CASE("the loss decreases on the default corpus for a CPU tier within a short run") {
  if (sg_test::skip_without_corpus()) return;
  sg::log::set_level("quiet");
  const std::string corpus = SG_TEST_CORPUS;
  const auto path = temp_name("test_train_corpus_tokens");
  sg::TokenizeOptions tokenize;
  tokenize.output = path;
  tokenize.force = true;
  tokenize.val_tokens = 5000;
  sg::tokenize_corpus(sg::list_corpus_files({corpus}), sg::Tokenizer::load(SG_GPT2_VOCAB), tokenize, nullptr);
  auto config = sg::make_run_config("tiny", "baseline", 0);
  sg::apply_overrides(config, {"iterations=60", "warmup=5", "lr_peak=3e-3", "lr_min=3e-4", "eval_interval=60",
                               "eval_batches=2", "final_eval_batches=2", "checkpoint_interval=60", "block_size=32"});
  const auto run = temp_name("test_train_corpus_run");
  sg::train(config, options_for(path, run));
  const auto state = sg::read_run_state(run);
  const auto& loss = state.curves.train_loss;
  CHECK(loss.front() > 10.0);  // ln(50257) = 10.8 at initialisation
  double tail = 0;
  for (size_t i = loss.size() - 5; i < loss.size(); ++i) tail += loss[i] / 5;
  CHECK(tail < loss.front() - 3.0);  // measured: 10.8 -> about 5.9 (train), 6.8 (val)
  CHECK(state.final_val_loss < loss.front() - 3.0);
  std::remove(path.c_str());
  std::remove(run.c_str());
}

TEST_CASE("run files: the configuration and state round-trip, a wrong kind of file is refused") {
  sg::log::set_level("quiet");
  const auto tokens = synthetic_tokens("test_train_roundtrip_tokens", 61, 2000, 300);
  auto config = small_run("sinklogit", 61);
  config.train.precision = sg::Precision::automatic;  // fixed at the start: bf16 where the CPU has bf16 units
  const auto run = temp_name("test_train_roundtrip_run");
  sg::train(config, options_for(tokens, run));
  const auto state = sg::read_run_state(run);
  // Every field as given, but the loss plan and the precision: auto is fixed at the start and recorded.
  auto expected = config;
  expected.train.loss_plan = state.config.train.loss_plan;
  expected.train.precision = sg_test::cpu_trains_bf16_by_default() ? sg::Precision::bf16 : sg::Precision::float32;
  CHECK(sg::to_fields(state.config) == sg::to_fields(expected));
  CHECK(state.config.train.loss_plan.chunk_rows > 0);
  CHECK(state.finished);
  CHECK(state.step == 12);
  CHECK(state.curves.step.size() == 12);
  CHECK(state.curves.val_step == std::vector<int64_t>{4, 8, 12});
  CHECK(std::isfinite(state.final_val_loss));
  CHECK_THROWS_WITH(sg::read_run_state(tokens), Catch::Contains(tokens));
  CHECK_THROWS_AS(sg::TokenFile::open(run), sg::InputError);
  CHECK(state.labels.empty());
  CHECK(sg::run_keys(run, state) == std::vector<std::pair<std::string, std::string>>{{"run", run}});
  // Labels: stored in the run file, carried by run_keys; `run` renames the run.
  auto labelled = options_for(tokens, run);
  labelled.labels = sg::parse_labels({"lr=3e-4", "run=sweep-a"});
  sg::train(config, labelled);
  const auto again = sg::read_run_state(run);
  CHECK(sg::run_keys(run, again) ==
        std::vector<std::pair<std::string, std::string>>{{"run", "sweep-a"}, {"lr", "3e-4"}});
  std::remove(tokens.c_str());
  std::remove(run.c_str());
}
