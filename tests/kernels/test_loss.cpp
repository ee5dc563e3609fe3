// Tests of lib/kernels/loss: the chunked linear cross-entropy against the unfused loss of LibTorch.
#include <catch2/catch.hpp>
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>

#include "lib/kernels/cpu_gemm.h"
#include "lib/kernels/cpu_kernels.h"
#include "lib/kernels/loss.h"
#include "lib/kernels/loss_tuning.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

TEST_CASE("chunked linear cross-entropy equals cross_entropy(hidden @ W^T), value and gradients") {
  torch::manual_seed(0);
  for (int64_t chunk : {0, 1, 7, 100}) {
    INFO("chunk rows " << chunk);
    auto hidden = torch::randn({37, 16}, torch::kDouble).requires_grad_(true);
    auto weight = torch::randn({211, 16}, torch::kDouble).requires_grad_(true);
    const auto targets = torch::randint(211, {37}, torch::kLong);
    auto hidden_ref = hidden.detach().clone().requires_grad_(true);
    auto weight_ref = weight.detach().clone().requires_grad_(true);
    auto loss = sg::linear_cross_entropy(hidden, weight, targets, chunk);
    auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden_ref, weight_ref.t()), targets);
    CHECK(std::abs(loss.item<double>() - ref.item<double>()) < 1e-6);
    (loss * 2.5).backward();
    (ref * 2.5).backward();
    CHECK((hidden.grad() - hidden_ref.grad()).abs().max().item<double>() < 1e-6);
    CHECK((weight.grad() - weight_ref.grad()).abs().max().item<double>() < 1e-6);
  }
  // Repeated targets (the scatter of -1/N adds up), float32, and a plain backward (scale one).
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    INFO("dtype " << dtype);
    const double tolerance = dtype == torch::kDouble ? 1e-12 : 2e-5;
    auto hidden = torch::randn({50, 8}, dtype).requires_grad_(true);
    auto weight = torch::randn({31, 8}, dtype).requires_grad_(true);
    const auto targets = torch::tensor({3, 3, 3, 0, 30}, torch::kLong).repeat({10});
    auto hidden_ref = hidden.detach().to(torch::kDouble).requires_grad_(true);
    auto weight_ref = weight.detach().to(torch::kDouble).requires_grad_(true);
    auto loss = sg::linear_cross_entropy(hidden, weight, targets, 16);
    auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden_ref, weight_ref.t()), targets);
    CHECK(std::abs(loss.item<double>() - ref.item<double>()) < tolerance);
    loss.backward();
    ref.backward();
    CHECK((hidden.grad().to(torch::kDouble) - hidden_ref.grad()).abs().max().item<double>() < tolerance);
    CHECK((weight.grad().to(torch::kDouble) - weight_ref.grad()).abs().max().item<double>() < tolerance);
  }
  torch::NoGradGuard no_grad;
  const auto h = torch::randn({5, 4}), w = torch::randn({9, 4});
  const auto t = torch::randint(9, {5}, torch::kLong);
  CHECK(std::abs(sg::linear_cross_entropy(h, w, t).item<double>() -
                 torch::nn::functional::cross_entropy(torch::matmul(h, w.t()), t).item<double>()) < 1e-5);
}

// Validation runs the loss under NoGradGuard with the model's parameters, whose requires_grad
// stays on: the loss must then do the logits product alone, not the two gradient products too.
// Counted through ATen's operator callbacks on the plain plan (every product an ATen op).
namespace {
std::atomic<int> products{0};       // the ATen matrix products seen by count_products
std::atomic<int> accumulations{0};  // of which in-place ones (dweight += Eᵀ h: gradients only)

std::unique_ptr<at::ObserverContext> count_products(const at::RecordFunction& call) {
  const std::string name = call.name();
  if (name == "aten::mm" || name == "aten::addmm" || name == "aten::addmm_") ++products;
  if (name == "aten::addmm_") ++accumulations;
  return nullptr;
}
}  // namespace

TEST_CASE("without grad mode the loss runs one matrix product a chunk, with it three") {
  const auto handle =
      at::addThreadLocalCallback(at::RecordFunctionCallback(count_products).scopes({at::RecordScope::FUNCTION}));
  torch::manual_seed(3);
  const auto hidden = torch::randn({96, 16}).requires_grad_(true);
  const auto weight = torch::randn({300, 16}).requires_grad_(true);
  const auto targets = torch::randint(300, {96}, torch::kLong);
  const sg::LossPlan plan{/*chunk_rows=*/32, sg::LossProducts::plain, std::nullopt};
  const auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden.detach().to(torch::kDouble),
                                                                      weight.detach().to(torch::kDouble).t()), targets);
  products = 0;
  {
    torch::NoGradGuard no_grad;
    const auto loss = sg::linear_cross_entropy(hidden, weight, targets, plan);
    CHECK(std::abs(loss.item<double>() - ref.item<double>()) < 1e-5);
  }
  CHECK(products.load() == 3);  // one a chunk of 32 rows
  products = 0;
  const auto loss = sg::linear_cross_entropy(hidden, weight, targets, plan);
  CHECK(products.load() == 9);  // logits, E W and Eᵀ h a chunk
  loss.backward();
  CHECK(hidden.grad().defined());
  at::removeCallback(handle);
}

// On the GPU, bf16 autocast hands the loss float32 hidden states (LayerNorm runs in float32 under
// autocast) and float32 weights; the products must still run in bf16, as autocast would run them
// (a float32 product there forgoes the tensor cores). CPU autocast shows the same rule here: the
// error against float64 is bf16's (well above float32's), and within bf16's tolerance.
TEST_CASE("under autocast the loss's products run in the autocast dtype, within bf16 tolerance of float64") {
  torch::manual_seed(5);
  const int64_t rows = 64, width = 32, vocab = 301;
  auto hidden = torch::randn({rows, width}).requires_grad_(true);
  auto weight = (torch::randn({vocab, width}) * 0.5).requires_grad_(true);
  const auto targets = torch::randint(vocab, {rows}, torch::kLong);
  auto hidden_ref = hidden.detach().to(torch::kDouble).requires_grad_(true);
  auto weight_ref = weight.detach().to(torch::kDouble).requires_grad_(true);
  torch::Tensor loss;
  {
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    loss = sg::linear_cross_entropy(hidden, weight, targets, 16);
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
  }
  auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden_ref, weight_ref.t()), targets);
  loss.backward();
  ref.backward();
  CHECK(loss.scalar_type() == torch::kFloat);
  CHECK(hidden.grad().scalar_type() == torch::kFloat);
  CHECK(weight.grad().scalar_type() == torch::kFloat);
  const double loss_error = std::abs(loss.item<double>() - ref.item<double>()) / ref.item<double>();
  const auto relative = [](const torch::Tensor& got, const torch::Tensor& want) {
    return ((got.to(torch::kDouble) - want).abs().max() / want.abs().max()).item<double>();
  };
  const double hidden_error = relative(hidden.grad(), hidden_ref.grad());
  const double weight_error = relative(weight.grad(), weight_ref.grad());
  INFO("relative errors: loss " << loss_error << ", dhidden " << hidden_error << ", dweight " << weight_error);
  CHECK(loss_error < 2e-2);
  CHECK(hidden_error < 3e-2);
  CHECK(weight_error < 3e-2);
  // bf16 (8 bits of mantissa) leaves errors near 1e-3; float32 would leave 1e-6.
  CHECK(hidden_error > 1e-4);
  CHECK(weight_error > 1e-4);
}

TEST_CASE("CPU float32 path (packed GEMM, AVX-512 or AVX2 rows) and its portable fallback against float64") {
  // The GPT-2 vocabulary size (odd, not a multiple of 64), rows that leave a short last chunk,
  // and logits spread enough that many exponentials underflow.
  for (const char* paths : {"all", "avx2", "none"}) {
    sg::enable_cpu_kernels(std::string(paths) != "none");
    sg::limit_cpu_kernels_to_avx2(std::string(paths) == "avx2");
    for (int64_t chunk : {0, 13}) {
      INFO("fast paths " << paths << " (rows: '" << sg::row_kernel_name(sg::switched_row_kernel()) << "'), chunk rows " << chunk);
      torch::manual_seed(3);
      const int64_t rows = 45, width = 24, vocab = 50257;
      auto hidden = (torch::randn({rows, width}) * 3).requires_grad_(true);
      auto weight = torch::randn({vocab, width}).requires_grad_(true);
      auto targets = torch::randint(vocab, {rows}, torch::kLong);
      targets.index_put_({torch::indexing::Slice(0, 4)}, 7);  // repeated targets
      auto hidden_ref = hidden.detach().to(torch::kDouble).requires_grad_(true);
      auto weight_ref = weight.detach().to(torch::kDouble).requires_grad_(true);
      auto loss = sg::linear_cross_entropy(hidden, weight, targets, chunk);
      auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden_ref, weight_ref.t()), targets);
      CHECK(loss.scalar_type() == torch::kFloat);
      CHECK(std::abs(loss.item<double>() - ref.item<double>()) < 1e-5 * std::max(1.0, ref.item<double>()));
      (loss * 0.5).backward();
      (ref * 0.5).backward();
      CHECK((hidden.grad().to(torch::kDouble) - hidden_ref.grad()).abs().max().item<double>() < 1e-5);
      CHECK((weight.grad().to(torch::kDouble) - weight_ref.grad()).abs().max().item<double>() < 1e-6);
      // Without gradients: the value alone.
      torch::NoGradGuard no_grad;
      CHECK(std::abs(sg::linear_cross_entropy(hidden.detach(), weight.detach(), targets, chunk).item<double>() -
                     ref.item<double>()) < 1e-5 * std::max(1.0, ref.item<double>()));
    }
  }
  sg::enable_cpu_kernels(true);
  sg::limit_cpu_kernels_to_avx2(false);
  // A target outside the vocabulary is an error, not a read past the logits.
  torch::NoGradGuard no_grad;
  const auto h = torch::randn({4, 8}), w = torch::randn({10, 8});
  CHECK_THROWS(sg::linear_cross_entropy(h, w, torch::tensor({1, 2, 10, 3}, torch::kLong)));
  CHECK_THROWS(sg::linear_cross_entropy(h, w, torch::tensor({1, -1, 0, 3}, torch::kLong)));
}

TEST_CASE("every plan the tuning can choose gives the float64 loss and gradients, and the choice is one of them") {
  // A shape whose chunks are 256, 333 (the old rule for V = 50257), 512 and all 700 rows.
  const int64_t rows = 700, width = 8, vocab = 50257;
  CHECK(sg::loss_chunk_candidates(rows, vocab) == std::vector<int64_t>{256, 333, 512, 700});
  const auto plans = sg::loss_plan_candidates(rows, vocab);
  REQUIRE(!plans.empty());
  CHECK(plans[0].chunk_rows == 333);  // the reference first
  const auto count = [&](sg::LossProducts products) {
    return std::count_if(plans.begin(), plans.end(), [&](const sg::LossPlan& p) { return p.products == products; });
  };
  const int64_t own = sg::has_avx512_gemm() ? 2 : 0;  // AVX-512 products 512, 700
  if (!own) WARN("no AVX-512F on this CPU: the AVX-512 products' plans are not tested here");
  if (sg::PackedRightOperand::available()) {
    CHECK(plans.size() == static_cast<size_t>(6 + own));  // packed 333, 256, 512, 700; plain 512, 700
    CHECK(plans[0].products == sg::LossProducts::packed);
    CHECK(count(sg::LossProducts::plain) == 2);
  } else {
    CHECK(plans.size() == static_cast<size_t>(4 + own));  // plain 256, 333, 512, 700
  }
  CHECK(count(sg::LossProducts::avx512) == own);
  torch::manual_seed(5);
  const auto hidden0 = torch::randn({rows, width}) * 2;
  const auto weight0 = torch::randn({vocab, width});
  const auto targets = torch::randint(vocab, {rows}, torch::kLong);
  auto hidden_ref = hidden0.to(torch::kDouble).requires_grad_(true);
  auto weight_ref = weight0.to(torch::kDouble).requires_grad_(true);
  auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden_ref, weight_ref.t()), targets);
  ref.backward();
  for (const auto& plan : plans) {
    INFO("chunk rows " << plan.chunk_rows << ", products " << sg::loss_products_name(plan.products));
    auto hidden = hidden0.clone().requires_grad_(true);
    auto weight = weight0.clone().requires_grad_(true);
    auto loss = sg::linear_cross_entropy(hidden, weight, targets, plan);
    loss.backward();
    CHECK(std::abs(loss.item<double>() - ref.item<double>()) < 1e-5 * std::max(1.0, ref.item<double>()));
    CHECK((hidden.grad().to(torch::kDouble) - hidden_ref.grad()).abs().max().item<double>() < 1e-5);
    CHECK((weight.grad().to(torch::kDouble) - weight_ref.grad()).abs().max().item<double>() < 1e-6);
  }
  // The logits cap: at V = 50257 no candidate above 2,670 rows (512 MB) but the old rule's.
  for (const int64_t n : sg::loss_chunk_candidates(100000, vocab)) CHECK(n * vocab * 4 <= (int64_t{512} << 20));
  // A small problem keeps the old rule without measuring; SINKGATE_LOSS_CHUNK_ROWS,
  // SINKGATE_LOSS_PACKED and SINKGATE_LOSS_PRODUCTS (which wins over SINKGATE_LOSS_PACKED) force.
  CHECK(sg::loss_plan(64, 16, 97).chunk_rows == std::min<int64_t>(64, sg::default_loss_chunk_rows(97)));
  setenv("SINKGATE_LOSS_CHUNK_ROWS", "123", 1);
  CHECK(sg::loss_plan(4096, 768, 50257).chunk_rows == 123);
  CHECK(sg::loss_plan(4096, 768, 50257).products == sg::reference_plan(4096, 50257).products);
  setenv("SINKGATE_LOSS_PACKED", "0", 1);
  CHECK(sg::loss_plan(4096, 768, 50257).products == sg::LossProducts::plain);
  setenv("SINKGATE_LOSS_PRODUCTS", "avx512", 1);
  CHECK(sg::loss_plan(4096, 768, 50257).products == sg::LossProducts::avx512);
  setenv("SINKGATE_LOSS_PRODUCTS", "packed", 1);
  CHECK(sg::loss_plan(4096, 768, 50257).products == sg::LossProducts::packed);
  setenv("SINKGATE_LOSS_PRODUCTS", "fastest", 1);  // not a name: SINKGATE_LOSS_PACKED's choice
  CHECK(sg::loss_plan(4096, 768, 50257).products == sg::LossProducts::plain);
  unsetenv("SINKGATE_LOSS_PRODUCTS");
  unsetenv("SINKGATE_LOSS_CHUNK_ROWS");
  CHECK(sg::loss_plan(4096, 768, 50257).chunk_rows == 333);
  unsetenv("SINKGATE_LOSS_PACKED");
  setenv("SG_LOSS_CHUNK_ROWS", "321", 1);  // the old name still works (with a warning)
  CHECK(sg::loss_plan(4096, 768, 50257).chunk_rows == 321);
  unsetenv("SG_LOSS_CHUNK_ROWS");
  // A large problem measures (in a cache folder of this test) and picks a candidate.
  char folder[] = "/tmp/sg-loss-tuning-XXXXXX";
  REQUIRE(mkdtemp(folder) != nullptr);
  setenv("SINKGATE_CACHE", folder, 1);
  const std::string cache = std::string(folder) + "/loss-chunks.tsv";
  // Measured under NoGradGuard (validation may be the first loss of a shape), it still times
  // the gradients, as training runs them: their in-place products show.
  accumulations = 0;
  const auto handle =
      at::addThreadLocalCallback(at::RecordFunctionCallback(count_products).scopes({at::RecordScope::FUNCTION}));
  sg::LossPlan chosen;
  {
    torch::NoGradGuard no_grad;
    chosen = sg::loss_plan(1024, 96, 50257);
  }
  at::removeCallback(handle);
  CHECK(accumulations.load() > 0);
  const auto allowed = sg::loss_plan_candidates(1024, 50257);
  CHECK(std::any_of(allowed.begin(), allowed.end(), [&](const sg::LossPlan& p) {
    return p.chunk_rows == chosen.chunk_rows && p.products == chosen.products;
  }));
  std::string line, measured_line;
  {
    std::ifstream cached(cache);
    REQUIRE(std::getline(cached, measured_line));
  }
  CHECK(measured_line.substr(measured_line.rfind('\t') + 1) == sg::loss_products_name(chosen.products));
  const auto key_end = measured_line.rfind('\t', measured_line.rfind('\t') - 1);
  CHECK(measured_line.substr(key_end + 1, measured_line.rfind('\t') - key_end - 1) == std::to_string(chosen.chunk_rows));
  // Another shape's key with an old-version line (a chunk alone) and then a plan: the last
  // complete line wins, so the cache is read, not measured again (a measurement picks a candidate,
  // and 77 rows is none).
  const std::string key = measured_line.substr(0, key_end);
  const std::string other = key.substr(0, key.find('\t', key.find('\t') + 1)) + "\t2048\t96\t50257" +
                            key.substr(key.rfind('\t'));
  {
    std::ofstream out(cache, std::ios::app);
    out << other << "\t512\n" << other << "\t77\tplain\n" << other << "\tgarbage\tplain\n" << other << "\t99\tfastest\n";
  }
  auto read = sg::loss_plan(2048, 96, 50257);
  CHECK(read.chunk_rows == 77);
  CHECK(read.products == sg::LossProducts::plain);
  // The AVX-512 products read back by name too.
  const std::string third = other.substr(0, other.find('\t', other.find('\t') + 1)) + "\t4096\t96\t50257" +
                            other.substr(other.rfind('\t'));
  {
    std::ofstream out(cache, std::ios::app);
    out << third << "\t88\tavx512\n";
  }
  read = sg::loss_plan(4096, 96, 50257);
  CHECK(read.chunk_rows == 88);
  CHECK(read.products == sg::LossProducts::avx512);
  unsetenv("SINKGATE_CACHE");
  std::remove(cache.c_str());
  rmdir(folder);
}

TEST_CASE("a fixed plan runs the paths it names whatever the switches, and names what the CPU lacks") {
  torch::manual_seed(11);
  const int64_t rows = 96, width = 16, vocab = 1000;
  const auto hidden0 = torch::randn({rows, width}) * 2;
  const auto weight0 = torch::randn({vocab, width});
  const auto targets = torch::randint(vocab, {rows}, torch::kLong);
  // (loss, dhidden, dweight) of a plan, with the fast paths switched on or off.
  const auto run = [&](const sg::LossPlan& plan, bool switches_on) {
    sg::enable_cpu_kernels(switches_on);
    auto hidden = hidden0.clone().requires_grad_(true);
    auto weight = weight0.clone().requires_grad_(true);
    auto loss = sg::linear_cross_entropy(hidden, weight, targets, plan);
    loss.backward();
    sg::enable_cpu_kernels(true);
    return std::vector<torch::Tensor>{loss.detach(), hidden.grad(), weight.grad()};
  };
  const auto same = [](const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!torch::equal(a[i], b[i])) return false;
    return true;
  };
  std::vector<sg::LossPlan> plans{{32, sg::LossProducts::plain, sg::RowKernel::portable}};
  for (const auto& kernel : sg::exp_shifted_rows_kernels()) {
    plans.push_back({32, sg::LossProducts::plain, kernel});
    if (sg::PackedRightOperand::present()) plans.push_back({48, sg::LossProducts::packed, kernel});
    if (sg::cpu_has_avx512_gemm()) plans.push_back({96, sg::LossProducts::avx512, kernel});
  }
  for (const auto& plan : plans) {
    INFO(sg::loss_plan_text(plan));
    CHECK(sg::loss_plan_missing(plan).empty());
    CHECK(same(run(plan, true), run(plan, false)));  // SINKGATE_CPU_KERNELS does not change a fixed plan
  }
  // The portable rows are ATen's own: the same bits as a plan that follows switched-off kernels.
  CHECK(same(run({32, sg::LossProducts::plain, sg::RowKernel::portable}, true), run({32, sg::LossProducts::plain, std::nullopt}, false)));
  // Another chunk adds up in another order: other bits (what a resume on another plan would give).
  CHECK_FALSE(same(run({32, sg::LossProducts::plain, sg::RowKernel::portable}, true), run({96, sg::LossProducts::plain, sg::RowKernel::portable}, true)));
  // The text form, and the fixed plan of a GPU or autocast loss: the chunk alone.
  CHECK(sg::loss_plan_text({4096, sg::LossProducts::packed, sg::RowKernel::avx512f}) == "4096:packed:avx512f");
  const auto gpu = sg::fixed_loss_plan(/*cpu_float32=*/false, 4096, 768, 50257);
  CHECK(sg::loss_plan_text(gpu) == std::to_string(sg::default_loss_chunk_rows(50257)) + ":plain:portable");
  const auto cpu = sg::fixed_loss_plan(/*cpu_float32=*/true, 64, 16, 97);
  CHECK(cpu.row_kernel.has_value());
  CHECK(sg::loss_plan_missing(cpu).empty());
  // What a CPU lacks is named, and replaced by what it runs.
  if (!sg::cpu_has_avx512_gemm()) {
    const sg::LossPlan wide{512, sg::LossProducts::avx512, sg::RowKernel::portable};
    CHECK_THAT(sg::loss_plan_missing(wide), Catch::Contains("AVX-512"));
    CHECK(sg::runnable_loss_plan(wide).products == sg::LossProducts::plain);
  }
  if (!sg::cpu_has_row_kernel(sg::RowKernel::avx512f)) {
    CHECK_THAT(sg::loss_plan_missing({512, sg::LossProducts::plain, sg::RowKernel::avx512f}), Catch::Contains("avx512f rows"));
    CHECK(sg::runnable_loss_plan({512, sg::LossProducts::plain, sg::RowKernel::avx512f}).row_kernel != sg::RowKernel::avx512f);
  }
}

namespace {

/// While alive: CPU bf16 autocast, as sg-train --precision bf16 runs the loss.
struct CpuBf16Autocast {
  CpuBf16Autocast() {
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCPU, true);
  }
  ~CpuBf16Autocast() {
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
  }
};

}  // namespace

// The bf16 loss of a CPU bf16 run against float64 on the same inputs rounded to bf16 (so that
// the error measured is the products' and the logits', not the inputs' rounding): bf16 products
// (float32 accumulation, bf16 logits) under each row kernel, the float32 AVX-512 products a fixed
// plan may name under autocast, and a bf16 plan outside autocast (a bf16 run's float32
// validation), which runs float32 products.
TEST_CASE("the CPU bf16 loss (each row kernel, float32 products where named) against float64 on bf16-rounded inputs") {
  torch::manual_seed(17);
  const int64_t rows = 70, width = 48, vocab = 2001;  // a short last chunk of 70 = 32 + 32 + 6
  const auto round = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat); };
  const auto hidden0 = round(torch::randn({rows, width}) * 2);
  const auto weight0 = round(torch::randn({vocab, width}) * 0.5);
  const auto targets = torch::randint(vocab, {rows}, torch::kLong);
  auto hidden_ref = hidden0.to(torch::kDouble).requires_grad_(true);
  auto weight_ref = weight0.to(torch::kDouble).requires_grad_(true);
  const auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden_ref, weight_ref.t()), targets);
  ref.backward();
  const double logit_rounding =
      torch::matmul(hidden_ref, weight_ref.t()).abs().max().item<double>() * std::ldexp(1.0, -9);
  const auto relative = [](const torch::Tensor& got, const torch::Tensor& want) {
    return ((got.to(torch::kDouble) - want).abs().max() / want.abs().max()).item<double>();
  };
  struct Case {
    sg::LossPlan plan;
    bool autocast;
    bool bf16_products;
  };
  std::vector<Case> cases;
  std::vector<sg::RowKernel> kernels{sg::RowKernel::portable};
  for (const auto& kernel : sg::exp_shifted_rows_kernels()) kernels.push_back(kernel);
  for (const auto& kernel : kernels) cases.push_back({{32, sg::LossProducts::bf16, kernel}, true, true});
  cases.push_back({{32, sg::LossProducts::bf16, std::nullopt}, true, true});  // the switches' rows
  if (sg::cpu_has_avx512_gemm()) cases.push_back({{32, sg::LossProducts::avx512, kernels.back()}, true, false});
  cases.push_back({{32, sg::LossProducts::bf16, kernels.back()}, false, false});
  // The loss's own bf16 products: bf16 operands, float32 logits; without autocast plain float32.
  // (With the AVX-512 rows E is written once in bf16 for the gradient products; with the others
  // it stays float32 and is rounded as it is packed.)
  if (sg::cpu_has_avx512_bf16_gemm()) {
    for (const auto& kernel : kernels) cases.push_back({{32, sg::LossProducts::avx512bf16, kernel}, true, true});
    cases.push_back({{32, sg::LossProducts::avx512bf16, kernels.back()}, false, false});
  }
  for (const auto& c : cases) {
    INFO(sg::loss_plan_text(c.plan) << (c.autocast ? " under bf16 autocast" : " without autocast"));
    auto hidden = hidden0.clone().requires_grad_(true);
    auto weight = weight0.clone().requires_grad_(true);
    torch::Tensor loss;
    {
      std::optional<CpuBf16Autocast> autocast;
      if (c.autocast) autocast.emplace();
      loss = sg::linear_cross_entropy(hidden, weight, targets, c.plan);
    }
    loss.backward();
    CHECK(loss.scalar_type() == torch::kFloat);
    CHECK(hidden.grad().scalar_type() == torch::kFloat);
    CHECK(weight.grad().scalar_type() == torch::kFloat);
    const double loss_error = std::abs(loss.item<double>() - ref.item<double>()) / ref.item<double>();
    const double hidden_error = relative(hidden.grad(), hidden_ref.grad());
    const double weight_error = relative(weight.grad(), weight_ref.grad());
    INFO("relative errors: loss " << loss_error << ", dhidden " << hidden_error << ", dweight " << weight_error
                                   << "; the largest logit's rounding " << logit_rounding);
    if (c.bf16_products) {
      // bf16 logits (as autocast gives them, on the GPU too): a logit z is off by up to |z| 2^-9,
      // a probability by that fraction of itself; then bf16 E and hidden/(sN) in the gradient
      // products, a few 2^-9 more.
      CHECK(loss_error < 5e-3);
      CHECK(hidden_error < 2 * logit_rounding + 1e-2);
      CHECK(weight_error < 2 * logit_rounding + 1e-2);
      CHECK(std::max(hidden_error, weight_error) > 1e-5);  // bf16 ran: float32 would leave about 1e-7
      // The own bf16 products keep the logits float32: on these bf16-exact operands the loss is
      // float32's (the gradients' products still round E and hidden / (sN) to bf16).
      if (c.plan.products == sg::LossProducts::avx512bf16) CHECK(loss_error < 1e-5);
    } else {
      CHECK(loss_error < 1e-5);
      CHECK(hidden_error < 1e-5);
      CHECK(weight_error < 1e-5);
    }
  }
  // Outside autocast (a bf16 run's float32 validation) avx512bf16 products are the float32
  // AVX-512 ones, bit for bit.
  if (sg::cpu_has_avx512_gemm()) {
    const auto float32_loss = [&](sg::LossProducts products) {
      auto hidden = hidden0.clone().requires_grad_(true);
      auto weight = weight0.clone().requires_grad_(true);
      auto loss = sg::linear_cross_entropy(hidden, weight, targets, sg::LossPlan{32, products, kernels.back()});
      loss.backward();
      return std::vector<torch::Tensor>{loss.detach(), hidden.grad(), weight.grad()};
    };
    const auto own = float32_loss(sg::LossProducts::avx512), validation = float32_loss(sg::LossProducts::avx512bf16);
    for (size_t i = 0; i < own.size(); ++i) CHECK(torch::equal(own[i], validation[i]));
  }
  // The plan names its products and what the CPU lacks for them.
  CHECK(sg::loss_plan_text({1024, sg::LossProducts::bf16, sg::RowKernel::avx512f}) == "1024:bf16:avx512f");
  CHECK(sg::loss_products_named("bf16") == sg::LossProducts::bf16);
  CHECK(sg::loss_products_named("avx512bf16") == sg::LossProducts::avx512bf16);
  if (!sg::cpu_has_avx512_bf16_gemm()) {
    CHECK_THAT(sg::loss_plan_missing({1024, sg::LossProducts::avx512bf16, sg::RowKernel::portable}), Catch::Contains("AVX512-BF16"));
    CHECK(sg::runnable_loss_plan({1024, sg::LossProducts::avx512bf16, sg::RowKernel::portable}).products !=
          sg::LossProducts::avx512bf16);
  }
  if (sg::cpu_bf16_features().empty()) {
    CHECK_THAT(sg::loss_plan_missing({1024, sg::LossProducts::bf16, sg::RowKernel::portable}), Catch::Contains("bf16 products"));
    CHECK(sg::runnable_loss_plan({1024, sg::LossProducts::bf16, sg::RowKernel::portable}).products == sg::LossProducts::plain);
  } else {
    CHECK(sg::loss_plan_missing({1024, sg::LossProducts::bf16, sg::RowKernel::portable}).empty());
  }
}

TEST_CASE("the CPU's bf16 features: named, masked by the AVX2 cap, and the refusal names what is missing") {
  const auto features = sg::cpu_bf16_features();
  for (const auto& feature : features) CHECK((feature == "amx-bf16" || feature == "avx512-bf16"));
  CHECK(sg::cpu_bf16_missing().empty() == !features.empty());
  sg::limit_cpu_kernels_to_avx2(true);
  CHECK(sg::cpu_bf16_features().empty());
  CHECK_THAT(sg::cpu_bf16_missing(), Catch::Contains("capped at AVX2") && Catch::Contains("AVX512-BF16"));
  sg::limit_cpu_kernels_to_avx2(false);
  CHECK(sg::cpu_bf16_features() == features);
  // The bf16 plan of a CPU bf16 run: bf16 products (or the float32 AVX-512 ones, where measured
  // faster) with a named row kernel; for this small shape the reference, bf16 in the fixed rule's chunk.
  const auto plan = sg::fixed_loss_plan(/*cpu_float32=*/false, 64, 16, 97, /*cpu_bf16=*/true);
  CHECK(plan.products == sg::LossProducts::bf16);
  CHECK(plan.chunk_rows == 64);
  CHECK(plan.row_kernel.has_value());
}
