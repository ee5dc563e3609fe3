// Tests of lib/model/attention: every arm against a naive float64 reference written here, loop by
// loop, with an explicit phantom column of value zero and an explicit masked softmax.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/model/attention.h"
#include "lib/model/runtime.h"

namespace {

using sg::Arm;
using sg::Filter;
using sg::ZeroOption;

constexpr int64_t kBatch = 2, kLength = 9, kWidth = 16, kHeads = 2, kHeadDim = kWidth / kHeads;

/// The reference: scalar loops over (b, h, i, j), float64, differentiable through autograd.
/// Inputs are the module's own parameters (cloned to float64); nothing is shared with the
/// implementation except the formulas of the paper.
torch::Tensor reference_attention(const torch::Tensor& x, const sg::AttentionImpl& module, const Arm& arm,
                                  double beta) {
  const auto w_attn = module.c_attn->weight, w_proj = module.c_proj->weight;
  const auto qkv = torch::matmul(x, w_attn.t());  // (B, T, 3C)
  const int64_t batch = x.size(0), length = x.size(1);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < length; ++i) {
      std::vector<torch::Tensor> heads;
      for (int64_t h = 0; h < kHeads; ++h) {
        auto q_of = [&](int64_t t) { return qkv[b][t].slice(0, h * kHeadDim, (h + 1) * kHeadDim); };
        auto k_of = [&](int64_t t) { return qkv[b][t].slice(0, kWidth + h * kHeadDim, kWidth + (h + 1) * kHeadDim); };
        auto v_of = [&](int64_t t) {
          return qkv[b][t].slice(0, 2 * kWidth + h * kHeadDim, 2 * kWidth + (h + 1) * kHeadDim);
        };
        auto gate_of = [&](const torch::Tensor& k, const torch::Tensor& v) -> torch::Tensor {
          if (arm.filter == Filter::normgate || arm.filter == Filter::renorm)
            return torch::sigmoid(beta * (v.norm() / std::sqrt(double(kHeadDim)) - module.gate_tau[h]));
          if (arm.filter == Filter::projgate) return torch::sigmoid(torch::dot(module.gate_w[h], v) + module.gate_b[h]);
          if (arm.filter == Filter::keygate)  // decided on the key, multiplies the read
            return torch::sigmoid(torch::dot(module.gate_w[h], k) / std::sqrt(double(kHeadDim)) + module.gate_b[h]);
          return torch::ones({}, x.options());
        };
        std::vector<torch::Tensor> logits, values;
        for (int64_t j = 0; j <= i; ++j) {  // the causal mask: only keys j <= i exist for query i
          auto s = torch::dot(q_of(i), k_of(j)) / std::sqrt(double(kHeadDim));
          const auto g = gate_of(k_of(j), v_of(j));
          if (arm.filter == Filter::renorm) s = s + torch::log(g);
          logits.push_back(s);
          values.push_back(arm.gates_values() ? g * v_of(j) : v_of(j));
        }
        if (arm.zero == ZeroOption::offbyone) {
          logits.push_back(torch::zeros({}, x.options()));
          values.push_back(torch::zeros({kHeadDim}, x.options()));  // the phantom's value is exactly zero
        }
        if (arm.zero == ZeroOption::sinklogit) {
          logits.push_back(module.sink_logit[h]);
          values.push_back(torch::zeros({kHeadDim}, x.options()));
        }
        auto maximum = logits[0];
        for (const auto& s : logits) maximum = torch::maximum(maximum, s);
        auto denominator = torch::zeros({}, x.options());
        for (const auto& s : logits) denominator = denominator + torch::exp(s - maximum);
        auto out = torch::zeros({kHeadDim}, x.options());
        for (size_t j = 0; j < logits.size(); ++j) out = out + torch::exp(logits[j] - maximum) / denominator * values[j];
        // The output gate (Qiu et al.): head h's output times sigma(W_theta row . x_i), one row per
        // head (head-wise) or per output element (element-wise), before the output projection.
        if (arm.output_gate == sg::OutputGate::headwise) out = out * torch::sigmoid(torch::dot(module.out_gate[h], x[b][i]));
        if (arm.output_gate == sg::OutputGate::elementwise) {
          std::vector<torch::Tensor> elements;
          for (int64_t e = 0; e < kHeadDim; ++e)
            elements.push_back(out[e] * torch::sigmoid(torch::dot(module.out_gate[h * kHeadDim + e], x[b][i])));
          out = torch::stack(elements);
        }
        heads.push_back(out);
      }
      rows.push_back(torch::matmul(w_proj, torch::cat(heads)));
    }
  }
  return torch::stack(rows).view({batch, length, kWidth});
}

sg::Attention make_attention(const Arm& arm, int64_t seed) {
  torch::manual_seed(seed);
  sg::AttentionOptions options;
  options.n_embd = kWidth;
  options.n_head = kHeads;
  options.n_layer = 2;
  options.arm = arm;
  sg::Attention module(options);
  module->to(torch::kDouble);
  return module;
}

/// Moves the arm parameters away from their initial values so that gates and sinks matter.
void perturb(sg::AttentionImpl& module, double sink) {
  torch::NoGradGuard no_grad;
  if (module.sink_logit.defined()) module.sink_logit.copy_(torch::tensor({sink, -0.7 * sink}, torch::kDouble));
  if (module.gate_tau.defined()) module.gate_tau.copy_(torch::tensor({0.05, 0.12}, torch::kDouble));
  if (module.gate_w.defined()) module.gate_w.normal_(0.0, 1.0);
  if (module.gate_b.defined()) module.gate_b.copy_(torch::tensor({0.3, -0.4}, torch::kDouble));
  if (module.out_gate.defined()) module.out_gate.normal_(0.0, 0.5);
  module.c_attn->weight.mul_(8.0);  // larger logits and reads: a sharper test
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

const char* kArms[] = {"baseline", "offbyone", "sinklogit", "normgate", "renorm", "projgate", "combo", "combo2",
                       "offbyone+projgate", "offbyone+renorm", "sinklogit+renorm",
                       // beyond the paper: the key gate and the output gate, alone and with each zero option
                       "keygate", "offbyone+keygate", "sinklogit+keygate", "outgate", "outgate-elem",
                       "offbyone+outgate", "sinklogit+outgate", "sinklogit+outgate-elem", "combo2+outgate",
                       "renorm+outgate", "keygate+outgate-elem"};

}  // namespace

TEST_CASE("every arm matches the float64 reference, forward and gradients, on both paths") {
  for (const char* name : kArms) {
    for (double sink : {0.0, 20.0, -20.0, 1.3}) {
      for (auto backend : {sg::AttentionBackend::explicit_math, sg::AttentionBackend::fused}) {
        const Arm arm = sg::parse_arm(name);
        if (sink != 0.0 && arm.zero != ZeroOption::sinklogit) continue;
        INFO("arm " << name << ", sink " << sink << ", backend " << (backend == sg::AttentionBackend::fused ? "fused" : "explicit"));
        auto module = make_attention(arm, 7);
        perturb(*module, sink);
        module->set_backend(backend);
        torch::manual_seed(11);
        auto x = torch::randn({kBatch, kLength, kWidth}, torch::kDouble).requires_grad_(true);
        auto x_ref = x.detach().clone().requires_grad_(true);
        auto out = module->forward(x);
        // Reference on cloned parameters so that its gradients are separate.
        auto ref_module = make_attention(arm, 7);
        {
          torch::NoGradGuard no_grad;
          for (size_t p = 0; p < module->parameters().size(); ++p)
            ref_module->parameters()[p].copy_(module->parameters()[p]);
        }
        auto ref = reference_attention(x_ref, *ref_module, arm, 8.0);
        REQUIRE(out.sizes() == ref.sizes());
        CHECK(max_diff(out, ref) < 1e-10);
        auto upstream = torch::randn_like(out);
        (out * upstream).sum().backward();
        (ref * upstream).sum().backward();
        CHECK(max_diff(x.grad(), x_ref.grad()) < 1e-9);
        const auto params = module->named_parameters(), ref_params = ref_module->named_parameters();
        for (const auto& item : params) {
          INFO("parameter " << item.key());
          CHECK(max_diff(item.value().grad(), ref_params[item.key()].grad()) < 1e-8);
        }
      }
    }
  }
}

TEST_CASE("a large sink logit drains the output, a very negative one restores the baseline") {
  auto sink_module = make_attention(sg::parse_arm("sinklogit"), 3);
  auto base_module = make_attention(sg::parse_arm("baseline"), 3);
  torch::manual_seed(5);
  const auto x = torch::randn({kBatch, kLength, kWidth}, torch::kDouble);
  torch::NoGradGuard no_grad;
  for (auto backend : {sg::AttentionBackend::explicit_math, sg::AttentionBackend::fused}) {
    sink_module->set_backend(backend);
    sink_module->sink_logit.fill_(20.0);
    CHECK(sink_module->forward(x).abs().max().item<double>() < 1e-6);
    sink_module->sink_logit.fill_(-20.0);
    CHECK(max_diff(sink_module->forward(x), base_module->forward(x)) < 1e-7);
  }
}

TEST_CASE("off-by-one adds one to the softmax denominator") {
  auto module = make_attention(sg::parse_arm("offbyone"), 4);
  torch::manual_seed(6);
  const auto x = torch::randn({kBatch, kLength, kWidth}, torch::kDouble);
  torch::NoGradGuard no_grad;
  // Direct formula, no max-subtraction: y_i = sum_j e^{s_ij} v_j / (1 + sum_j e^{s_ij}).
  const auto qkv = torch::matmul(x, module->c_attn->weight.t()).view({kBatch, kLength, 3, kHeads, kHeadDim});
  const auto q = qkv.select(2, 0).transpose(1, 2), k = qkv.select(2, 1).transpose(1, 2),
             v = qkv.select(2, 2).transpose(1, 2);
  const auto mask = torch::ones({kLength, kLength}, torch::kDouble).tril();
  const auto e = torch::exp(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(kHeadDim))) * mask;
  const auto y = torch::matmul(e / (1.0 + e.sum(-1, true)), v).transpose(1, 2).reshape({kBatch, kLength, kWidth});
  const auto expected = torch::matmul(y, module->c_proj->weight.t());
  for (auto backend : {sg::AttentionBackend::explicit_math, sg::AttentionBackend::fused}) {
    module->set_backend(backend);
    CHECK(max_diff(module->forward(x), expected) < 1e-12);
  }
}

TEST_CASE("the phantom mass of the sink logit is exp(b) / (exp(b) + sum_j exp(s_ij))") {
  auto module = make_attention(sg::parse_arm("sinklogit"), 8);
  torch::NoGradGuard no_grad;
  module->sink_logit.copy_(torch::tensor({0.8, -1.5}, torch::kDouble));
  std::vector<sg::AttentionTelemetry> telemetry;
  auto hooks = std::make_shared<sg::AttentionHooks>();
  hooks->telemetry = [&](int64_t, const sg::AttentionTelemetry& record) { telemetry.push_back(record); };
  module->set_hooks(hooks);
  torch::manual_seed(9);
  const auto x = torch::randn({kBatch, kLength, kWidth}, torch::kDouble);
  module->forward(x);
  REQUIRE(telemetry.size() == 1);
  const auto qkv = torch::matmul(x, module->c_attn->weight.t()).view({kBatch, kLength, 3, kHeads, kHeadDim});
  const auto q = qkv.select(2, 0).transpose(1, 2), k = qkv.select(2, 1).transpose(1, 2);
  const auto mask = torch::ones({kLength, kLength}, torch::kDouble).tril();
  const auto row = (torch::exp(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(kHeadDim))) * mask).sum(-1);
  const auto eb = torch::exp(module->sink_logit).view({1, kHeads, 1});
  CHECK(max_diff(telemetry[0].phantom_mass.to(torch::kDouble), eb / (eb + row)) < 1e-6);
  // Weights on the real keys plus the phantom sum to one; masked keys get nothing.
  CHECK(max_diff(telemetry[0].weights.sum(-1) + telemetry[0].phantom_mass, torch::ones({kBatch, kHeads, kLength})) < 1e-6);
  CHECK(telemetry[0].weights.triu(1).abs().max().item<double>() == 0.0);
}

TEST_CASE("Lemma 3.1: the norm gate's output is Z_i times the routing-slot control's output") {
  auto norm = make_attention(sg::parse_arm("normgate"), 12);
  auto renorm = make_attention(sg::parse_arm("renorm"), 12);
  torch::NoGradGuard no_grad;
  for (auto* module : {&norm, &renorm}) {
    (*module)->gate_tau.copy_(torch::tensor({0.4, 0.9}, torch::kDouble));  // gates well below one
    (*module)->c_proj->weight.copy_(torch::eye(kWidth, torch::kDouble));  // expose per-head outputs
  }
  renorm->c_attn->weight.copy_(norm->c_attn->weight);
  std::vector<sg::AttentionTelemetry> telemetry;
  auto hooks = std::make_shared<sg::AttentionHooks>();
  hooks->telemetry = [&](int64_t, const sg::AttentionTelemetry& record) { telemetry.push_back(record); };
  norm->set_hooks(hooks);
  torch::manual_seed(13);
  const auto x = torch::randn({kBatch, kLength, kWidth}, torch::kDouble);
  const auto y_norm = norm->forward(x).view({kBatch, kLength, kHeads, kHeadDim});
  const auto y_renorm = renorm->forward(x).view({kBatch, kLength, kHeads, kHeadDim});
  const auto& t = telemetry.at(0);
  const auto z = (t.weights.to(torch::kDouble) * t.gates.to(torch::kDouble).unsqueeze(2)).sum(-1);  // (B, H, T)
  CHECK(z.max().item<double>() < 0.95);  // the factor is not trivially one
  const auto scaled = y_renorm * z.transpose(1, 2).unsqueeze(-1);
  CHECK(max_diff(y_norm, scaled) < 1e-6);
}

TEST_CASE("at initialisation the gates are open (>= 0.98) and the sink logit is zero") {
  for (const char* name : {"normgate", "projgate", "combo", "combo2", "renorm"}) {
    INFO(name);
    auto module = make_attention(sg::parse_arm(name), 21);
    std::vector<sg::AttentionTelemetry> telemetry;
    auto hooks = std::make_shared<sg::AttentionHooks>();
    hooks->telemetry = sg::store_telemetry(telemetry);
    module->set_hooks(hooks);
    torch::NoGradGuard no_grad;
    module->forward(torch::randn({kBatch, kLength, kWidth}, torch::kDouble) * 10.0);
    CHECK(telemetry.at(0).gates.min().item<double>() >= 0.98);
    if (module->sink_logit.defined()) CHECK(module->sink_logit.abs().max().item<double>() == 0.0);
    if (module->gate_tau.defined()) CHECK(module->gate_tau.eq(-0.5).all().item<bool>());
    if (module->gate_w.defined()) CHECK(module->gate_w.abs().max().item<double>() == 0.0);
    if (module->gate_b.defined()) CHECK(module->gate_b.eq(4.0).all().item<bool>());
  }
}

TEST_CASE("the corruption hook acts on the reads before the gate") {
  auto module = make_attention(sg::parse_arm("normgate"), 30);
  std::vector<sg::AttentionTelemetry> telemetry;
  auto hooks = std::make_shared<sg::AttentionHooks>();
  hooks->telemetry = [&](int64_t, const sg::AttentionTelemetry& record) { telemetry.push_back(record); };
  hooks->corrupt = [](const torch::Tensor& reads, int64_t) { return torch::zeros_like(reads); };
  module->set_hooks(hooks);
  torch::NoGradGuard no_grad;
  const auto out = module->forward(torch::randn({kBatch, kLength, kWidth}, torch::kDouble));
  CHECK(out.abs().max().item<double>() == 0.0);
  // Zero reads have norm zero, so the gate saw the corrupted reads: g = sigmoid(8 (0 + 0.5)).
  CHECK(max_diff(telemetry.at(0).gates.to(torch::kDouble),
                 torch::full({kBatch, kHeads, kLength}, 1.0 / (1.0 + std::exp(-4.0)), torch::kDouble)) < 1e-6);
}

TEST_CASE("gate overrides: row mean, shuffle within row, reopen") {
  auto module = make_attention(sg::parse_arm("normgate"), 40);
  torch::NoGradGuard no_grad;
  module->gate_tau.copy_(torch::tensor({0.3, 0.6}, torch::kDouble));
  module->c_proj->weight.copy_(torch::eye(kWidth, torch::kDouble));
  torch::manual_seed(41);
  const auto x = torch::randn({kBatch, kLength, kWidth}, torch::kDouble);
  std::vector<sg::AttentionTelemetry> telemetry;
  auto hooks = std::make_shared<sg::AttentionHooks>();
  hooks->telemetry = [&](int64_t, const sg::AttentionTelemetry& record) { telemetry.push_back(record); };
  module->set_hooks(hooks);
  const auto trained = module->forward(x);
  const auto a = telemetry[0].weights.to(torch::kDouble), g = telemetry[0].gates.to(torch::kDouble);
  const auto v = telemetry[0].reads.to(torch::kDouble);  // (B, H, T, d)
  auto per_head = [](const torch::Tensor& y) { return y.view({kBatch, kLength, kHeads, kHeadDim}).transpose(1, 2); };

  auto run = [&](sg::GateOverride how, int64_t seed) {
    auto h = std::make_shared<sg::AttentionHooks>();
    h->gate_override = how;
    h->override_seed = seed;
    module->set_hooks(h);
    return per_head(module->forward(x));
  };
  // Row mean: y_i = (sum_j a_ij g_j) * sum_j a_ij v_j.
  const auto z = (a * g.unsqueeze(2)).sum(-1, true);
  CHECK(max_diff(run(sg::GateOverride::row_mean, 0), z * torch::matmul(a, v)) < 1e-10);
  // Reopen: gates below one half become one.
  const auto reopened = torch::where(g < 0.5, torch::ones_like(g), g);
  CHECK((g < 0.5).any().item<bool>());
  CHECK(max_diff(run(sg::GateOverride::reopen, 0), torch::matmul(a, v * reopened.unsqueeze(-1))) < 1e-10);
  // Shuffle: query 0 sees one key, so its row is unchanged; the multiset of gates in each row
  // is preserved, so the attention-weighted... check the row-0 output and a changed output.
  const auto shuffled = run(sg::GateOverride::shuffle, 1);
  const auto y_trained = per_head(trained);
  CHECK(max_diff(shuffled.select(2, 0), y_trained.select(2, 0)) < 1e-10);
  CHECK(max_diff(shuffled, y_trained) > 1e-4);
  CHECK(max_diff(run(sg::GateOverride::shuffle, 1), shuffled) == 0.0);  // seeded
}

TEST_CASE("fused_sink_attention: gradient of the sink logit by finite differences") {
  torch::manual_seed(50);
  auto q = torch::randn({1, 2, 6, 8}, torch::kDouble), k = torch::randn({1, 2, 6, 8}, torch::kDouble),
       v = torch::randn({1, 2, 6, 8}, torch::kDouble);
  auto sink = torch::tensor({0.5, -1.0}, torch::kDouble).requires_grad_(true);
  auto upstream = torch::randn({1, 2, 6, 8}, torch::kDouble);
  (sg::fused_sink_attention(q, k, v, sink, 0.3) * upstream).sum().backward();
  for (int h = 0; h < 2; ++h) {
    const double eps = 1e-6;
    auto plus = sink.detach().clone(), minus = sink.detach().clone();
    plus[h] += eps;
    minus[h] -= eps;
    const double numeric = ((sg::fused_sink_attention(q, k, v, plus, 0.3) * upstream).sum() -
                            (sg::fused_sink_attention(q, k, v, minus, 0.3) * upstream).sum())
                               .item<double>() / (2 * eps);
    CHECK(std::abs(sink.grad()[h].item<double>() - numeric) < 1e-7);
  }
}

TEST_CASE("the CUDA path is built in: the fused kernels it calls have CUDA implementations linked") {
  // No GPU runs here; this checks that the CUDA kernels behind the fused path are in the binary.
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const char* op : {"aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_flash_attention_backward",
                         "aten::_scaled_dot_product_efficient_attention",
                         "aten::_scaled_dot_product_efficient_attention_backward"}) {
    INFO(op);
    const auto handle = dispatcher.findSchema({op, ""});
    REQUIRE(handle.has_value());
    CHECK(handle->hasKernelForDispatchKey(c10::DispatchKey::CUDA));
  }
}

// ---- In half precision: on a GPU (pipelines/gpu_check.sh runs these on a CUDA machine; without a
// ---- GPU they report that they were skipped and pass), and under the CPU's bf16 autocast.

namespace {

/// max |a - b| / max |b|, on the CPU in float64.
double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const auto a64 = a.detach().to(torch::kCPU, torch::kDouble), b64 = b.detach().to(torch::kCPU, torch::kDouble);
  return (a64 - b64).abs().max().item<double>() / std::max(b64.abs().max().item<double>(), 1e-300);
}

/// Softmax attention with a phantom column of value zero, by the textbook formula in float64:
/// the reference for the GPU kernels at lengths where the loop reference would be slow.
torch::Tensor phantom_reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& sink, double scale, bool causal) {
  const int64_t b = q.size(0), h = q.size(1), t = q.size(2), tk = k.size(2);
  auto logits = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (causal) {
    const auto hidden = torch::ones({t, tk}, torch::kBool).tril().logical_not();
    logits = logits.masked_fill(hidden, -std::numeric_limits<double>::infinity());
  }
  const auto column = sink.view({1, h, 1, 1}).expand({b, h, t, 1});
  const auto probs = torch::softmax(torch::cat({logits, column}, -1), -1).slice(-1, 0, tk);
  return torch::matmul(probs, v);
}

bool skip_without_gpu() {
  if (torch::cuda::is_available()) return false;
  WARN("no CUDA GPU on this machine: skipped (pipelines/gpu_check.sh runs it on one)");
  return true;
}


/// The fused phantom kernel on `device` in each dtype, lengths 1, 7, 100 (and 257 on a GPU), causal
/// and not, sink logits -20 ... +20: output and the gradients of q, k, v and the sink against
/// float64 on the same rounded inputs.
void check_phantom_kernels(const torch::Device& device, const std::vector<torch::ScalarType>& dtypes,
                           const std::vector<int64_t>& lengths) {
  for (auto dtype : dtypes) {
    // Half precision flushes exp(-20)-sized outputs to zero; it is not what training uses (bf16).
    const std::vector<double> sinks = dtype == torch::kHalf ? std::vector<double>{-20.0, 0.0, 1.3}
                                                            : std::vector<double>{-20.0, 0.0, 1.3, 20.0};
    const double tolerance = dtype == torch::kFloat ? 1e-4 : 2e-2;
    for (int64_t length : lengths) {
      for (bool causal : {true, false}) {
        for (double sink_value : sinks) {
          INFO("device " << device << ", dtype " << dtype << ", length " << length << ", causal " << causal
                         << ", sink " << sink_value);
          torch::manual_seed(60 + length);
          // Inputs rounded to the kernel's precision first, so the reference sees the same numbers.
          auto round = [&](torch::Tensor t) { return t.to(dtype).to(torch::kDouble); };
          const auto q = round(torch::randn({2, 3, length, 64}, torch::kDouble) * 1.5);
          const auto k = round(torch::randn({2, 3, length, 64}, torch::kDouble) * 1.5);
          const auto v = round(torch::randn({2, 3, length, 64}, torch::kDouble));
          const auto upstream = round(torch::randn({2, 3, length, 64}, torch::kDouble));
          const auto sink = torch::tensor({sink_value, 0.5 * sink_value, -1.0}, torch::kDouble);
          const double scale = 0.125;

          auto q64 = q.clone().requires_grad_(true), k64 = k.clone().requires_grad_(true),
               v64 = v.clone().requires_grad_(true), sink64 = sink.clone().requires_grad_(true);
          const auto ref = phantom_reference(q64, k64, v64, sink64, scale, causal);
          (ref * upstream).sum().backward();

          auto qg = q.to(device, dtype).requires_grad_(true), kg = k.to(device, dtype).requires_grad_(true),
               vg = v.to(device, dtype).requires_grad_(true);
          auto sinkg = sink.to(device, torch::kFloat).requires_grad_(true);
          const auto out = sg::fused_sink_attention(qg, kg, vg, sinkg, scale, causal);
          REQUIRE(out.scalar_type() == dtype);
          (out.to(torch::kFloat) * upstream.to(device, torch::kFloat)).sum().backward();

          CHECK(relative_error(out, ref) < tolerance);
          CHECK(relative_error(qg.grad(), q64.grad()) < 2 * tolerance);
          CHECK(relative_error(kg.grad(), k64.grad()) < 2 * tolerance);
          CHECK(relative_error(vg.grad(), v64.grad()) < 2 * tolerance);
          CHECK(relative_error(sinkg.grad(), sink64.grad()) < 2 * tolerance);
        }
      }
    }
  }
}

/// Every arm on `device`, in float32 and/or under bf16 autocast (`modes`), on both paths, against
/// the loop-by-loop float64 reference on sequences of `length`, with each of the sink logits `sinks`.
void check_arms_against_reference(const torch::Device& device, int64_t length, const std::vector<bool>& modes,
                                  const std::vector<double>& sinks) {
  for (const char* name : kArms) {
    for (double sink : sinks) {
      const Arm arm = sg::parse_arm(name);
      if (sink != 0.0 && arm.zero != ZeroOption::sinklogit) continue;
      auto ref_module = make_attention(arm, 7);
      perturb(*ref_module, sink);
      torch::manual_seed(11);
      const auto x = torch::randn({kBatch, length, kWidth}, torch::kDouble);
      const auto upstream = torch::randn({kBatch, length, kWidth}, torch::kDouble);
      auto x_ref = x.clone().requires_grad_(true);
      const auto ref = reference_attention(x_ref, *ref_module, arm, 8.0);
      (ref * upstream).sum().backward();
      const auto ref_params = ref_module->named_parameters();

      for (bool autocast : modes) {
        for (auto backend : {sg::AttentionBackend::explicit_math, sg::AttentionBackend::fused}) {
          INFO("device " << device << ", arm " << name << ", sink " << sink << ", "
                         << (autocast ? "bf16 autocast" : "fp32") << ", "
                         << (backend == sg::AttentionBackend::fused ? "fused" : "explicit"));
          // fp32 differs from float64 by rounding alone; bf16 autocast rounds the projections and
          // the attention to 8 bits of mantissa on sharp (8x scaled) logits.
          const double tolerance = autocast ? 0.1 : 1e-4;
          auto module = make_attention(arm, 7);
          {
            torch::NoGradGuard no_grad;
            for (const auto& item : ref_params) module->named_parameters()[item.key()].copy_(item.value());
          }
          module->to(device, torch::kFloat);
          module->set_backend(backend);
          auto xg = x.to(device, torch::kFloat).requires_grad_(true);
          torch::Tensor out;
          {
            sg::AutocastGuard guard(device, autocast);
            out = module->forward(xg);
          }
          // Under autocast the output projection runs in bf16: bf16 really ran.
          if (autocast) CHECK(out.scalar_type() == torch::kBFloat16);
          (out.to(torch::kFloat) * upstream.to(device, torch::kFloat)).sum().backward();
          CHECK(std::isfinite(out.abs().max().item<double>()));
          CHECK(relative_error(out, ref) < tolerance);
          CHECK(relative_error(xg.grad(), x_ref.grad()) < 2 * tolerance);
          for (const auto& item : module->named_parameters()) {
            INFO("parameter " << item.key());
            // The master weights and their gradients stay float32.
            CHECK(item.value().grad().scalar_type() == torch::kFloat);
            CHECK(relative_error(item.value().grad(), ref_params[item.key()].grad()) < 2 * tolerance);
          }
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("on a GPU, the fused phantom kernels (flash in bf16/fp16, efficient in fp32) match float64", "[cuda]") {
  if (skip_without_gpu()) return;
  check_phantom_kernels(torch::Device(torch::kCUDA), {torch::kBFloat16, torch::kHalf, torch::kFloat}, {1, 7, 100, 257});
}

TEST_CASE("on the CPU, the fused phantom kernel in bf16 (a bf16 run's) matches float64 on bf16-rounded inputs") {
  check_phantom_kernels(torch::Device(torch::kCPU), {torch::kBFloat16}, {1, 7, 100});
}

TEST_CASE("on a GPU, every arm matches the float64 reference in fp32 and under bf16 autocast, on both paths",
          "[cuda]") {
  if (skip_without_gpu()) return;
  check_arms_against_reference(torch::Device(torch::kCUDA), 40, {false, true}, {0.0, 20.0, -20.0, 1.3});
}

TEST_CASE("under CPU bf16 autocast (--precision bf16), every arm matches the float64 reference, on both paths") {
  check_arms_against_reference(torch::Device(torch::kCPU), kLength, {true}, {0.0, 20.0});
}
