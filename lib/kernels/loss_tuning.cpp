// loss_tuning.cpp — see loss_tuning.h.
#include "lib/kernels/loss_tuning.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "lib/base/environment.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/paths.h"
#include "lib/io/atomic_file.h"
#include "lib/kernels/cpu_gemm.h"
#include "lib/kernels/cpu_kernels.h"
#include "lib/kernels/loss.h"

namespace sg {
namespace {

constexpr double kMeasureAbove = 4294967296.0;           // rows × width × vocab multiply-adds (2^32)
constexpr int64_t kMostLogitBytes = int64_t{512} << 20;  // one chunk's float logits at most

/// The best row kernel this CPU has, whatever the switches (the last row of the table it has).
RowKernel best_row_kernel() {
  RowKernel best = RowKernel::portable;
  for (const auto& row : row_kernels_table())
    if (cpu_has_row_kernel(row.value)) best = row.value;
  return best;
}

/// Whether the CPU (and torch) has what the products need.
bool cpu_runs(LossProducts products) { return cpu_feature_missing(info(products).needs).empty(); }

std::string cache_path() { return cache_folder() + "/loss-chunks.tsv"; }

std::string describe(const LossPlan& plan) {
  return std::to_string(plan.chunk_rows) + " rows " + loss_products_name(plan.products);
}

/// Which fast paths run: the row kernel's instruction set, MKL's packed GEMM and the AVX-512
/// products, or "portable".
std::string fast_paths() {
  std::string paths = has_exp_shifted_rows() ? row_kernel_name(switched_row_kernel()) : "";
  if (PackedRightOperand::available()) paths += paths.empty() ? "mkl-packed" : "+mkl-packed";
  if (has_avx512_gemm()) paths += paths.empty() ? "avx512-gemm" : "+avx512-gemm";
  return paths.empty() ? "portable" : paths;
}

/// The plans measured for the loss under CPU bf16 autocast: bf16 products (the reference in the
/// fixed rule's chunk, then the chunk candidates) and, where the CPU has AVX-512F, the loss's own
/// float32 AVX-512 products in the long chunks, and where it has AVX512-BF16 the loss's own bf16
/// products in the same chunks; each with the best row kernel named (a fixed plan, so that float32
/// products stay float32 under autocast).
std::vector<LossPlan> bf16_plan_candidates(int64_t rows, int64_t vocab) {
  const RowKernel rows_kernel = best_row_kernel();
  const int64_t reference_rows = std::min(rows, default_loss_chunk_rows(vocab));
  std::vector<LossPlan> plans{{reference_rows, LossProducts::bf16, rows_kernel}};
  const auto chunks = loss_chunk_candidates(rows, vocab);
  for (const int64_t n : chunks)
    if (n != reference_rows) plans.push_back({n, LossProducts::bf16, rows_kernel});
  if (has_avx512_gemm())
    for (const int64_t n : chunks)
      if (n >= 512 || n == rows) plans.push_back({n, LossProducts::avx512, rows_kernel});
  if (has_avx512_bf16_gemm())
    for (const int64_t n : chunks)
      if (n >= 512 || n == rows) plans.push_back({n, LossProducts::avx512bf16, rows_kernel});
  return plans;
}

/// The cached plan for `key` (a tab-joined line prefix; the last line of it wins), or none.
std::optional<LossPlan> read_cached(const std::string& key) {
  std::ifstream in(cache_path());  // opens: its own cache of measurements, not an input
  std::string line;
  std::optional<LossPlan> found;
  while (std::getline(in, line)) {
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 || line[key.size()] != '\t') continue;
    // "<chunk>\t<plain|packed|avx512>"; lines of older versions (a chunk alone) are measured again.
    std::istringstream fields(line.substr(key.size() + 1));
    std::string chunk, packing, rest;
    if (!std::getline(fields, chunk, '\t') || !std::getline(fields, packing, '\t') || std::getline(fields, rest)) continue;
    const auto products = loss_products_named(packing);
    if (!products) continue;
    try {
      const long long rows = std::stoll(chunk);
      if (rows > 0) found = LossPlan{rows, *products, std::nullopt};
    } catch (const std::exception&) {
    }
  }
  return found;
}

/// Appends key → plan to the cache file, atomically (io/atomic_file.h); failures are ignored: the
/// cache only saves a measurement.
void write_cached(const std::string& key, const LossPlan& plan) {
  std::ostringstream content;
  {
    std::ifstream in(cache_path());  // opens: its own cache of measurements, not an input
    content << in.rdbuf();
  }
  std::string text = content.str();
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += key + "\t" + std::to_string(plan.chunk_rows) + "\t" + loss_products_name(plan.products) + "\n";
  try {
    write_text(cache_path(), text, /*force=*/true);
  } catch (const Error& error) {
    log::debug(std::string("sinkgate: the loss plan was not cached: ") + error.what());
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// Measures the candidates (the reference first) on `rows` random rows and returns the chosen
/// one's index (see the file comment); `report` gets every time.
size_t measure(const std::vector<LossPlan>& candidates, int64_t rows, int64_t width, int64_t vocab, bool bf16,
               std::string& report) {
  torch::AutoGradMode with_gradients(true);  // timed as training runs it, whatever the caller's mode
  // Under bf16 autocast for the bf16 plans, as a bf16 run calls the loss; restored on return.
  struct Autocast {
    bool on, previous;
    explicit Autocast(bool enable) : on(enable), previous(at::autocast::is_autocast_enabled(at::kCPU)) {
      if (!on) return;
      at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
      at::autocast::set_autocast_enabled(at::kCPU, true);
    }
    ~Autocast() {
      if (on) at::autocast::set_autocast_enabled(at::kCPU, previous);
    }
  } autocast(bf16);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(1);  // the global generator stays untouched
  const auto hidden = torch::randn({rows, width}, generator).requires_grad_(true);
  const auto weight = (torch::randn({vocab, width}, generator) * 0.02).requires_grad_(true);
  const auto targets = torch::randint(vocab, {rows}, generator, torch::TensorOptions().dtype(torch::kLong));
  const auto seconds = [&](const LossPlan& plan) {
    const auto start = std::chrono::steady_clock::now();
    linear_cross_entropy(hidden, weight, targets, plan);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  seconds(candidates.back());  // warm-up: allocations, packing buffers, threads
  std::vector<std::vector<double>> ratios(candidates.size());  // per candidate, time / reference's, by round
  std::ostringstream times;
  const auto round = [&](const std::vector<size_t>& order) {
    std::vector<double> taken(candidates.size(), 0.0);
    for (const size_t c : order) taken[c] = seconds(candidates[c]);
    times << " |";
    for (const size_t c : order) {
      ratios[c].push_back(taken[c] / taken[0]);
      times << " " << describe(candidates[c]) << " " << static_cast<int64_t>(taken[c] * 1e3) << " ms";
    }
  };
  std::vector<size_t> all(candidates.size());
  for (size_t c = 0; c < all.size(); ++c) all[c] = c;
  round(all);
  // The reference and the three fastest of the first round, twice more, in reversed and then
  // rotated order (so that no candidate always runs right after the same one).
  std::vector<size_t> finalists(all.begin() + 1, all.end());
  std::sort(finalists.begin(), finalists.end(), [&](size_t a, size_t b) { return ratios[a][0] < ratios[b][0]; });
  if (finalists.size() > 3) finalists.resize(3);
  finalists.insert(finalists.begin(), 0);
  std::vector<size_t> order(finalists.rbegin(), finalists.rend());
  round(order);
  std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(order.size() / 2), order.end());
  round(order);
  size_t best = 0;
  double best_median = 0.97;  // at least 3 % faster in the median, and faster in every round
  for (const size_t c : finalists) {
    if (c == 0) continue;
    const double typical = median(ratios[c]);
    if (*std::max_element(ratios[c].begin(), ratios[c].end()) < 1.0 && typical < best_median) {
      best = c;
      best_median = typical;
    }
  }
  report = times.str();
  return best;
}

}  // namespace

int64_t default_loss_chunk_rows(int64_t vocab) { return std::max<int64_t>(64, (int64_t{1} << 24) / std::max<int64_t>(1, vocab)); }

LossPlan reference_plan(int64_t rows, int64_t vocab) {
  return {std::min(rows, default_loss_chunk_rows(vocab)),
          PackedRightOperand::available() ? LossProducts::packed : LossProducts::plain, std::nullopt};
}

std::vector<int64_t> loss_chunk_candidates(int64_t rows, int64_t vocab) {
  std::vector<int64_t> candidates;
  const auto fits = [&](int64_t n) { return n * vocab * 4 <= kMostLogitBytes || n == default_loss_chunk_rows(vocab); };
  const int64_t old = std::min(rows, default_loss_chunk_rows(vocab));
  for (int64_t n = 256; n < rows; n *= 2)
    if (fits(n)) candidates.push_back(n);
  if (fits(rows)) candidates.push_back(rows);
  candidates.push_back(old);
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  return candidates;
}

std::vector<LossPlan> loss_plan_candidates(int64_t rows, int64_t vocab, bool bf16) {
  if (bf16) return bf16_plan_candidates(rows, vocab);
  const bool packing = PackedRightOperand::available();
  const LossPlan reference = reference_plan(rows, vocab);
  std::vector<LossPlan> plans{reference};
  const auto chunks = loss_chunk_candidates(rows, vocab);
  if (packing)
    for (const int64_t n : chunks)
      if (n != reference.chunk_rows) plans.push_back({n, LossProducts::packed, std::nullopt});
  for (const int64_t n : chunks)  // plain: the long chunks (torch::mm packs per product), or all but the reference
    if (packing ? n >= 512 || n == rows : n != reference.chunk_rows) plans.push_back({n, LossProducts::plain, std::nullopt});
  if (has_avx512_gemm())  // the AVX-512 products pack per block: the long chunks
    for (const int64_t n : chunks)
      if (n >= 512 || n == rows) plans.push_back({n, LossProducts::avx512, std::nullopt});
  return plans;
}

int64_t forced_loss_chunk_rows() {
  if (const char* forced = sinkgate_env("LOSS_CHUNK_ROWS"); forced && *forced) {
    try {
      const long long n = std::stoll(forced);
      if (n > 0) return n;
    } catch (const std::exception&) {
    }
    static std::once_flag warned;
    std::call_once(warned, [&] {
      log::warn(sinkgate_env_name("LOSS_CHUNK_ROWS") + "='" + std::string(forced) +
                "' is not a positive integer; ignored");
    });
  }
  return 0;
}

LossPlan loss_plan(int64_t rows, int64_t width, int64_t vocab, bool bf16) {
  const LossPlan reference = bf16 ? bf16_plan_candidates(rows, vocab).front() : reference_plan(rows, vocab);
  const int64_t forced_rows = forced_loss_chunk_rows();
  std::optional<LossProducts> forced_products;
  if (const char* named = sinkgate_env("LOSS_PRODUCTS"); named && *named) {
    forced_products = loss_products_named(named);
    if (!forced_products) {
      static std::once_flag warned;
      std::call_once(warned, [&] {
        log::warn(sinkgate_env_name("LOSS_PRODUCTS") + "='" + std::string(named) + "' is not " + loss_products_names() +
                  "; ignored");
      });
    }
  }
  const char* packed = sinkgate_env("LOSS_PACKED");
  const std::string forced_packing = packed ? packed : "";
  if (!forced_products && (forced_packing == "0" || forced_packing == "1"))
    forced_products = forced_packing == "1" ? LossProducts::packed : LossProducts::plain;
  if (forced_rows > 0 || forced_products)
    return {forced_rows > 0 ? forced_rows : reference.chunk_rows, forced_products ? *forced_products : reference.products,
            reference.row_kernel};
  const char* tuning = sinkgate_env("LOSS_TUNING");
  if ((tuning && std::string(tuning) == "0") ||
      static_cast<double>(rows) * static_cast<double>(width) * static_cast<double>(vocab) < kMeasureAbove)
    return reference;
  static std::mutex mutex;
  static std::map<std::string, LossPlan> chosen;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = cpu_model_name() + "\t" + std::to_string(at::get_num_threads()) + "\t" + std::to_string(rows) + "\t" +
                          std::to_string(width) + "\t" + std::to_string(vocab) + "\t" +
                          fast_paths() + (bf16 ? std::string("\tbf16") + (has_avx512_bf16_gemm() ? "+avx512bf16-gemm" : "") : "");
  if (const auto it = chosen.find(key); it != chosen.end()) return it->second;
  std::optional<LossPlan> best = read_cached(key);
  if (!best) {
    const auto candidates = loss_plan_candidates(rows, vocab, bf16);
    log::info(std::string("sinkgate: timing the CPU ") + (bf16 ? "bf16 " : "") + "loss's " + std::to_string(candidates.size()) + " plans for " + std::to_string(rows) +
              " x " + std::to_string(width) + " x " + std::to_string(vocab) + " on " +
              std::to_string(at::get_num_threads()) + " threads (once for this machine; SINKGATE_LOSS_TUNING=0 skips it)");
    std::string report;
    best = candidates[measure(candidates, rows, width, vocab, bf16, report)];
    log::debug("sinkgate: loss plans (chunk rows, packing; reference first):" + report);
    log::info("sinkgate: the CPU loss takes chunks of " + describe(*best) + " on this machine (cached in " + cache_path() + ")");
    write_cached(key, *best);
  }
  chosen[key] = *best;
  return *best;
}

LossPlan fixed_loss_plan(bool cpu_float32, int64_t rows, int64_t width, int64_t vocab, bool cpu_bf16) {
  if (cpu_bf16) {  // the CPU loss under bf16 autocast: bf16 products, or the float32 AVX-512 ones where faster
    LossPlan plan = loss_plan(rows, width, vocab, /*bf16=*/true);
    // Plain products under autocast are bf16 ones: named so.
    if (plan.products == LossProducts::plain || (plan.products == LossProducts::avx512 && !has_avx512_gemm()) ||
        (plan.products == LossProducts::avx512bf16 && !has_avx512_bf16_gemm()))
      plan.products = LossProducts::bf16;
    plan.row_kernel = switched_row_kernel();
    return plan;
  }
  if (!cpu_float32) {  // cuBLAS or autocast products and ATen's rows: only the chunk is a choice
    const int64_t forced = forced_loss_chunk_rows();
    return {forced > 0 ? forced : default_loss_chunk_rows(vocab), LossProducts::plain, RowKernel::portable};
  }
  LossPlan plan = loss_plan(rows, width, vocab);
  // What the switches let run (SINKGATE_CPU_KERNELS), named, as the automatic plan runs it.
  if ((plan.products == LossProducts::packed && !PackedRightOperand::available()) ||
      (plan.products == LossProducts::avx512 && !has_avx512_gemm()) || info(plan.products).bf16_run_only)
    plan.products = LossProducts::plain;
  plan.row_kernel = switched_row_kernel();
  return plan;
}

LossPlan spelled_loss_plan(const LossPlan& named) {
  LossPlan plan = named;
  if (!plan.row_kernel) plan.row_kernel = switched_row_kernel();
  return plan;
}

std::string cpu_feature_missing(CpuFeature feature) {
  switch (feature) {
    case CpuFeature::none: return "";
    case CpuFeature::mkl_packed: return PackedRightOperand::present() ? "" : "MKL's packed GEMM is not in this torch";
    case CpuFeature::avx512f: return cpu_has_row_kernel(RowKernel::avx512f) ? "" : "the CPU has no AVX-512F";
    case CpuFeature::avx2_fma: return cpu_has_row_kernel(RowKernel::avx2) ? "" : "the CPU lacks AVX2 with FMA";
    case CpuFeature::bf16_matrix: return cpu_bf16_missing();
    case CpuFeature::avx512_bf16: return cpu_has_avx512_bf16_gemm() ? "" : "the CPU has no AVX512-BF16";
  }
  return "";
}

std::string loss_plan_missing(const LossPlan& plan) {
  std::vector<std::string> missing;
  const auto& products = info(plan.products);
  if (const std::string why = cpu_feature_missing(products.needs); !why.empty())
    missing.push_back(std::string(products.title) + " (" + why + ")");
  if (plan.row_kernel)
    if (const std::string why = cpu_feature_missing(info(*plan.row_kernel).needs); !why.empty())
      missing.push_back(std::string(row_kernel_name(*plan.row_kernel)) + " rows (" + why + ")");
  std::string text;
  for (const auto& item : missing) text += (text.empty() ? "" : " and ") + item;
  return text;
}

LossPlan runnable_loss_plan(const LossPlan& plan) {
  LossPlan out = plan;
  while (!cpu_runs(out.products)) out.products = info(out.products).instead;  // plain needs nothing
  if (out.row_kernel && !cpu_has_row_kernel(*out.row_kernel)) out.row_kernel = best_row_kernel();
  return out;
}

namespace {

/// The environment variables that choose the loss plan of a run that has none and are set, by
/// the name they were given.
std::vector<std::string> plan_variables_set() {
  std::vector<std::string> names;
  for (const char* suffix : {"LOSS_CHUNK_ROWS", "LOSS_PRODUCTS", "LOSS_PACKED", "LOSS_TUNING", "CPU_KERNELS"})
    if (sinkgate_env(suffix)) names.push_back(sinkgate_env_name(suffix));
  return names;
}

/// The plan a request names (not auto), on this machine.
LossPlan named_plan(const LossPlanRequest& request, const std::string& prefix, bool keeps_recorded) {
  const LossPlan& asked = request.asked;
  if (!request.cpu_float32 && !request.cpu_bf16) {  // cuBLAS products and ATen rows: the chunk is the plan's only choice
    if (asked.products != LossProducts::plain || (asked.row_kernel && *asked.row_kernel != RowKernel::portable))
      log::info(prefix + "on " + request.device + " the loss runs cuBLAS's products and ATen's rows: of loss_plan " +
                loss_plan_text(asked) + " only the chunk of " + std::to_string(asked.chunk_rows) + " rows applies");
    return {asked.chunk_rows, LossProducts::plain, RowKernel::portable};
  }
  LossPlan plan = spelled_loss_plan(asked);
  if (info(plan.products).bf16_run_only && !request.cpu_bf16)
    throw UsageError("loss_plan " + loss_plan_text(asked) + " names " + loss_products_name(plan.products) +
                         " products, which run in a bf16 run only",
                     "train with --precision bf16, or name float32 products (" + loss_products_names(ProductsOf::float32_runs) + ")");
  if (request.cpu_bf16 && plan.products == LossProducts::plain) plan.products = LossProducts::bf16;  // autocast's, named so
  const std::string missing = loss_plan_missing(plan);
  if (missing.empty()) return plan;
  if (!keeps_recorded)
    throw UsageError("loss_plan " + loss_plan_text(plan) + " needs " + missing,
                     "name a plan this machine runs, or --set loss_plan=auto");
  const LossPlan instead = runnable_loss_plan(plan);
  log::warn("this machine cannot run the run's loss plan " + loss_plan_text(plan) + " (no " + missing + "): it runs " +
            loss_plan_text(instead) + ", so the resumed run will not be bitwise identical to an uninterrupted one");
  return instead;
}

}  // namespace

LossPlan resolve_run_loss_plan(const LossPlanRequest& request, const std::string& prefix,
                               const std::function<LossPlan(const LossPlan&)>& agree) {
  const bool automatic = request.asked.automatic();
  const bool keeps_recorded = request.resume && !request.replaced && !request.recorded.automatic();
  LossPlan plan = automatic ? fixed_loss_plan(request.cpu_float32, request.rows, request.width, request.vocab,
                                              request.cpu_bf16)
                            : named_plan(request, prefix, keeps_recorded);
  if (agree) plan = agree(plan);
  const std::string text = loss_plan_text(plan);
  if (keeps_recorded) {
    std::string note;
    for (const auto& name : plan_variables_set()) note += (note.empty() ? "" : ", ") + name;
    log::info(prefix + "loss plan " + text + ", the run's own (recorded in its file)" +
              (note.empty() ? "" : "; " + note + " would choose a new run's plan, not this one's: --set loss_plan=... replaces it"));
  } else if (request.resume && request.recorded.automatic()) {
    log::info(prefix + "loss plan " + text + ": the run file records none (written before sinkgate recorded it), so "
              "this resume fixes one and records it; the steps before may have run another");
  } else if (request.resume && plan != request.recorded) {
    log::warn("loss plan " + text + " replaces the run's " + loss_plan_text(request.recorded) +
              " (--set loss_plan): the resumed run will not be bitwise identical to an uninterrupted one");
  } else {
    log::info(prefix + "loss plan " + text + (automatic ? " (auto: chosen for this machine; recorded in the run file)" : ""));
  }
  return plan;
}

}  // namespace sg
