// loss_tuning.cpp — see loss_tuning.h.
#include "lib/model/loss_tuning.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include "lib/base/log.h"
#include "lib/model/loss.h"
#include "lib/text/tokenizer.h"

namespace sg {
namespace {

constexpr double kMeasureAbove = 4294967296.0;           // rows × width × vocab multiply-adds (2^32)
constexpr int64_t kMostLogitBytes = int64_t{512} << 20;  // one chunk's float logits at most

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown CPU";
}

std::string cache_path() { return cache_folder() + "/loss-chunks.tsv"; }

/// The cached chunk for `key` (a tab-joined line prefix), or 0.
int64_t read_cached(const std::string& key) {
  std::ifstream in(cache_path());
  std::string line;
  while (std::getline(in, line))
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == '\t') {
      try {
        return std::stoll(line.substr(key.size() + 1));
      } catch (const std::exception&) {
        return 0;
      }
    }
  return 0;
}

/// Appends key → chunk to the cache file, atomically (a temporary renamed over it); failures are
/// ignored: the cache only saves a measurement.
void write_cached(const std::string& key, int64_t chunk) {
  std::ostringstream content;
  {
    std::ifstream in(cache_path());
    content << in.rdbuf();
  }
  std::string text = content.str();
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += key + "\t" + std::to_string(chunk) + "\n";
  const std::string temporary = cache_path() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) return;
    out << text;
    if (!out) {
      std::remove(temporary.c_str());
      return;
    }
  }
  if (std::rename(temporary.c_str(), cache_path().c_str()) != 0) std::remove(temporary.c_str());
}

/// Seconds of the whole loss (forward and gradients) of `rows` random rows in chunks of each
/// candidate: a warm-up, then two rounds with the candidates interleaved (so that a drift of the
/// machine's speed favours none); per candidate its better (first) and worse (second) time.
std::vector<std::pair<double, double>> time_candidates(const std::vector<int64_t>& candidates, int64_t rows, int64_t width, int64_t vocab) {
  torch::NoGradGuard no_grad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(1);  // the global generator stays untouched
  const auto hidden = torch::randn({rows, width}, generator).requires_grad_(true);
  const auto weight = (torch::randn({vocab, width}, generator) * 0.02).requires_grad_(true);
  const auto targets = torch::randint(vocab, {rows}, generator, torch::TensorOptions().dtype(torch::kLong));
  linear_cross_entropy(hidden, weight, targets, candidates.back());  // warm-up: allocations, packing buffers
  std::vector<std::pair<double, double>> times(candidates.size());
  for (int round = 0; round < 2; ++round)
    for (size_t c = 0; c < candidates.size(); ++c) {
      const auto start = std::chrono::steady_clock::now();
      linear_cross_entropy(hidden, weight, targets, candidates[c]);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      times[c] = round == 0 ? std::make_pair(seconds, seconds)
                            : std::make_pair(std::min(times[c].first, seconds), std::max(times[c].second, seconds));
    }
  return times;
}

}  // namespace

int64_t default_loss_chunk_rows(int64_t vocab) { return std::max<int64_t>(64, (int64_t{1} << 24) / std::max<int64_t>(1, vocab)); }

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

int64_t forced_loss_chunk_rows() {
  if (const char* forced = std::getenv("SG_LOSS_CHUNK_ROWS"); forced && *forced) {
    try {
      const long long n = std::stoll(forced);
      if (n > 0) return n;
    } catch (const std::exception&) {
    }
    static std::once_flag warned;
    std::call_once(warned, [&] {
      log::info("sinkgate: warning: SG_LOSS_CHUNK_ROWS='" + std::string(forced) + "' is not a positive integer; ignored");
    });
  }
  return 0;
}

int64_t loss_chunk_rows(int64_t rows, int64_t width, int64_t vocab) {
  if (const int64_t forced = forced_loss_chunk_rows(); forced > 0) return forced;
  const int64_t fallback = default_loss_chunk_rows(vocab);
  const char* tuning = std::getenv("SG_LOSS_TUNING");
  if ((tuning && std::string(tuning) == "0") ||
      static_cast<double>(rows) * static_cast<double>(width) * static_cast<double>(vocab) < kMeasureAbove)
    return fallback;
  static std::mutex mutex;
  static std::map<std::string, int64_t> chosen;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = cpu_model() + "\t" + std::to_string(at::get_num_threads()) + "\t" + std::to_string(rows) + "\t" +
                          std::to_string(width) + "\t" + std::to_string(vocab);
  if (const auto it = chosen.find(key); it != chosen.end()) return it->second;
  int64_t best = read_cached(key);
  if (best <= 0) {
    // Another chunk than the old rule's only when even its worse time beats the old rule's
    // better one by 10 %: differences within the machine's noise keep the old behaviour.
    const auto candidates = loss_chunk_candidates(rows, vocab);
    const auto times = time_candidates(candidates, rows, width, vocab);
    const int64_t old = std::min(rows, fallback);
    const auto old_index = static_cast<size_t>(std::find(candidates.begin(), candidates.end(), old) - candidates.begin());
    best = old;
    double best_worst = times[old_index].first * 0.9;
    std::ostringstream report;
    for (size_t c = 0; c < candidates.size(); ++c) {
      report << " " << candidates[c] << ": " << static_cast<int64_t>(times[c].first * 1e3) << "–"
             << static_cast<int64_t>(times[c].second * 1e3) << " ms";
      if (c != old_index && times[c].second < best_worst) {
        best = candidates[c];
        best_worst = times[c].second;
      }
    }
    log::debug("sinkgate: loss chunks for " + std::to_string(rows) + " x " + std::to_string(width) + " x " +
               std::to_string(vocab) + " on " + std::to_string(at::get_num_threads()) + " threads:" + report.str());
    log::info("sinkgate: the CPU loss takes chunks of " + std::to_string(best) + " rows on this machine (measured once; " +
              cache_path() + ")");
    write_cached(key, best);
  }
  chosen[key] = best;
  return best;
}

}  // namespace sg
