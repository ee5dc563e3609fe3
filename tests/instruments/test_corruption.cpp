// Tests of lib/instruments/corruption against a naive float64 reference written here: which reads
// are quiet (per sequence and head, strictly below the median or 25th percentile, numpy's linear
// interpolation), that exactly those change and each by a vector of norm ε·m_h, where each junk
// type's vector comes from, the sink token's position, and that the junk is keyed by
// (seed, layer, head, batch) only.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "lib/base/error.h"
#include "lib/instruments/corruption.h"

namespace {

constexpr int64_t kB = 3, kH = 2, kT = 9, kD = 5;

/// numpy.quantile(values, q) with the default linear interpolation, written out.
double reference_quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto low = static_cast<size_t>(std::floor(position));
  const size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (values[high] - values[low]) * (position - static_cast<double>(low));
}

double norm_of(const torch::Tensor& v) {
  double total = 0;
  for (int64_t i = 0; i < v.size(0); ++i) total += v[i].item<double>() * v[i].item<double>();
  return std::sqrt(total);
}

/// The reference quiet set and median of reads (B, H, T, d) for one (b, h), positions from `skip`.
struct Reference {
  std::vector<bool> quiet;
  double median = 0;
};
Reference reference(const torch::Tensor& reads, int64_t b, int64_t h, double q, int64_t skip = 0) {
  std::vector<double> norms;
  for (int64_t t = skip; t < reads.size(2); ++t) norms.push_back(norm_of(reads[b][h][t]));
  Reference r;
  const double cutoff = reference_quantile(norms, q);
  r.median = reference_quantile(norms, 0.5);
  for (double n : norms) r.quiet.push_back(n < cutoff);
  return r;
}

torch::Tensor random_reads(int64_t seed) {
  torch::manual_seed(seed);
  // Norms spread over an order of magnitude, so that cutoffs separate reads clearly.
  return torch::randn({kB, kH, kT, kD}, torch::kDouble) * torch::rand({kB, kH, kT, 1}, torch::kDouble).mul(3).add(0.2);
}

/// Checks that out differs from reads exactly at the reference's quiet reads, each by ε·m_h in
/// norm; returns the unit junk vectors (B, H, T, d) (zero where unchanged).
torch::Tensor check_changes(const torch::Tensor& reads, const torch::Tensor& out, double q, double dose,
                            int64_t skip = 0) {
  auto units = torch::zeros_like(reads);
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t h = 0; h < kH; ++h) {
      const auto r = reference(reads, b, h, q, skip);
      for (int64_t t = 0; t < skip; ++t) CHECK(torch::equal(out[b][h][t], reads[b][h][t]));
      for (int64_t t = skip; t < kT; ++t) {
        const auto delta = out[b][h][t] - reads[b][h][t];
        const double size = norm_of(delta);
        INFO("b " << b << " h " << h << " t " << t);
        if (r.quiet[t - skip]) {
          CHECK(std::abs(size - dose * r.median) < 1e-9);
          units[b][h][t] = delta / (dose * r.median);
        } else {
          CHECK(size == 0.0);
        }
      }
    }
  return units;
}

/// True if `u` is the normalised read of (b, h, t) for some t in `positions`.
bool is_read_of(const torch::Tensor& reads, const torch::Tensor& u, int64_t b, int64_t h, const std::vector<int64_t>& positions) {
  for (int64_t t : positions) {
    const auto v = reads[b][h][t];
    if ((v / norm_of(v) - u).abs().max().item<double>() < 1e-9) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("quantiles and quiet reads follow numpy's linear interpolation, strictly below the cutoff") {
  const auto reads = random_reads(1);
  const auto norms = reads.norm(2, -1);  // (B, H, T)
  for (double q : {0.25, 0.5}) {
    const auto got = sg::norm_quantile(norms, q);
    const auto mask = sg::quiet_mask(norms, q == 0.5 ? sg::Cutoff::median : sg::Cutoff::q25);
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t h = 0; h < kH; ++h) {
        const auto r = reference(reads, b, h, q);
        std::vector<double> values;
        for (int64_t t = 0; t < kT; ++t) values.push_back(norm_of(reads[b][h][t]));
        CHECK(std::abs(got[b][h].item<double>() - reference_quantile(values, q)) < 1e-12);
        for (int64_t t = 0; t < kT; ++t) CHECK(mask[b][h][t].item<bool>() == r.quiet[t]);
      }
  }
  // Ties: a read equal to the cutoff is not quiet (nine equal norms: none is quiet).
  CHECK(sg::quiet_mask(torch::ones({1, 1, 9}), sg::Cutoff::median).sum().item<int64_t>() == 0);
  // Nine distinct norms: 4 below the median, 2 below the 25th percentile (position 2 exactly).
  const auto ranks = torch::arange(1, 10, torch::kDouble).view({1, 1, 9});
  CHECK(sg::quiet_mask(ranks, sg::Cutoff::median).sum().item<int64_t>() == 4);
  CHECK(sg::quiet_mask(ranks, sg::Cutoff::q25).sum().item<int64_t>() == 2);
}

TEST_CASE("exactly the quiet reads change, each by eps * m_h along its junk type's direction") {
  const auto reads = random_reads(2);
  const double dose = 0.8;
  SECTION("structured: a read of the same head from another sequence of the batch") {
    sg::CorruptionSpec spec{sg::JunkType::structured, sg::Cutoff::q25, dose, 7};
    torch::Tensor mask;
    const auto out = sg::corrupt_reads(reads, spec, /*layer=*/1, /*batch=*/0, {}, &mask);
    const auto units = check_changes(reads, out, 0.25, dose);
    CHECK(mask.sum().item<int64_t>() == out.ne(reads).any(-1).sum().item<int64_t>());
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t h = 0; h < kH; ++h)
        for (int64_t t = 0; t < kT; ++t) {
          if (!mask[b][h][t].item<bool>()) continue;
          std::vector<int64_t> all(kT);
          for (int64_t p = 0; p < kT; ++p) all[p] = p;
          bool other = false;
          for (int64_t o = 0; o < kB; ++o) other = other || (o != b && is_read_of(reads, units[b][h][t], o, h, all));
          CHECK(other);
          CHECK_FALSE(is_read_of(reads, units[b][h][t], b, h, all));  // never the same sequence (reads are distinct)
        }
  }
  SECTION("same-context: a read from another position of the same sequence") {
    sg::CorruptionSpec spec{sg::JunkType::same_context, sg::Cutoff::median, dose, 7};
    torch::Tensor mask;
    const auto out = sg::corrupt_reads(reads, spec, 0, 0, {}, &mask);
    const auto units = check_changes(reads, out, 0.5, dose);
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t h = 0; h < kH; ++h)
        for (int64_t t = 0; t < kT; ++t) {
          if (!mask[b][h][t].item<bool>()) continue;
          std::vector<int64_t> others;
          for (int64_t p = 0; p < kT; ++p)
            if (p != t) others.push_back(p);
          CHECK(is_read_of(reads, units[b][h][t], b, h, others));
        }
  }
  SECTION("same-context-earlier: a read from an earlier position of the same sequence; the first read untouched") {
    sg::CorruptionSpec spec{sg::JunkType::same_context_earlier, sg::Cutoff::median, dose, 7};
    torch::Tensor mask;
    const auto out = sg::corrupt_reads(reads, spec, 0, 0, {}, &mask);
    int64_t corrupted = 0, later_ones = 0;
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t h = 0; h < kH; ++h) {
        const auto r = reference(reads, b, h, 0.5, 0);
        CHECK(torch::equal(out[b][h][0], reads[b][h][0]));
        CHECK_FALSE(mask[b][h][0].item<bool>());
        for (int64_t t = 1; t < kT; ++t) {
          const auto delta = out[b][h][t] - reads[b][h][t];
          INFO("b " << b << " h " << h << " t " << t);
          CHECK(mask[b][h][t].item<bool>() == static_cast<bool>(r.quiet[t]));
          if (!r.quiet[t]) {
            CHECK(norm_of(delta) == 0.0);
            continue;
          }
          ++corrupted;
          CHECK(std::abs(norm_of(delta) - dose * r.median) < 1e-9);
          const auto u = delta / (dose * r.median);
          std::vector<int64_t> earlier, later;
          for (int64_t p = 0; p < kT; ++p) (p < t ? earlier : later).push_back(p);
          CHECK(is_read_of(reads, u, b, h, earlier));
          if (is_read_of(reads, u, b, h, later)) ++later_ones;
        }
      }
    CHECK(corrupted > 4);
    CHECK(later_ones == 0);
  }
  SECTION("gaussian: unit vectors, different for every read") {
    sg::CorruptionSpec spec{sg::JunkType::gaussian, sg::Cutoff::median, dose, 7};
    const auto out = sg::corrupt_reads(reads, spec, 0, 0);
    const auto units = check_changes(reads, out, 0.5, dose);
    const auto nonzero = units.norm(2, -1).gt(0.5);
    CHECK(nonzero.sum().item<int64_t>() > 4);
    const auto flat = units.reshape({-1, kD}).index({nonzero.reshape({-1})});
    for (int64_t i = 1; i < flat.size(0); ++i) CHECK((flat[i] - flat[0]).abs().max().item<double>() > 1e-6);
  }
  SECTION("random-direction: one unit vector per head, shared by every corrupted read") {
    sg::CorruptionSpec spec{sg::JunkType::random_direction, sg::Cutoff::median, dose, 7};
    torch::Tensor mask;
    const auto out = sg::corrupt_reads(reads, spec, 0, 0, {}, &mask);
    const auto units = check_changes(reads, out, 0.5, dose);
    for (int64_t h = 0; h < kH; ++h) {
      torch::Tensor first;
      for (int64_t b = 0; b < kB; ++b)
        for (int64_t t = 0; t < kT; ++t) {
          if (!mask[b][h][t].item<bool>()) continue;
          if (!first.defined()) first = units[b][h][t];
          CHECK((units[b][h][t] - first).abs().max().item<double>() < 1e-9);
        }
    }
    // The two heads draw different directions.
    CHECK((units[0][0].sum(0) - units[0][1].sum(0)).abs().max().item<double>() > 1e-6);
  }
  SECTION("own-direction: w_h / |w_h| of the head's projection gate") {
    const auto w = torch::randn({kH, kD}, torch::kDouble);
    sg::CorruptionSpec spec{sg::JunkType::own_direction, sg::Cutoff::median, dose, 7};
    torch::Tensor mask;
    const auto out = sg::corrupt_reads(reads, spec, 0, 0, w, &mask);
    const auto units = check_changes(reads, out, 0.5, dose);
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t h = 0; h < kH; ++h)
        for (int64_t t = 0; t < kT; ++t)
          if (mask[b][h][t].item<bool>()) CHECK((units[b][h][t] - w[h] / norm_of(w[h])).abs().max().item<double>() < 1e-9);
    CHECK_THROWS_AS(sg::corrupt_reads(reads, spec, 0, 0), sg::UsageError);                          // no gate
    CHECK_THROWS_AS(sg::corrupt_reads(reads, spec, 0, 0, torch::zeros({kH, kD}, torch::kDouble)), sg::UsageError);
  }
}

TEST_CASE("dose zero leaves the reads exactly as they were, bad doses and batches are refused") {
  const auto reads = random_reads(3).to(torch::kFloat);
  sg::CorruptionSpec spec{sg::JunkType::structured, sg::Cutoff::median, 0.0, 1};
  torch::Tensor mask;
  CHECK(torch::equal(sg::corrupt_reads(reads, spec, 0, 0, {}, &mask), reads));
  CHECK(mask.sum().item<int64_t>() == kB * kH * 4);  // the quiet reads still count as receiving (zero) junk
  spec.dose = -0.1;
  CHECK_THROWS_AS(sg::corrupt_reads(reads, spec, 0, 0), sg::UsageError);
  spec.dose = 0.2;
  CHECK_THROWS_WITH(sg::corrupt_reads(reads.narrow(0, 0, 1), spec, 0, 0), Catch::Contains("at least 2 sequences"));
  CHECK_THROWS_AS(sg::parse_junk("structure"), sg::UsageError);
  CHECK(sg::parse_junk("same-context") == sg::JunkType::same_context);
  CHECK(sg::parse_junk("same-context-earlier") == sg::JunkType::same_context_earlier);
  CHECK(sg::to_string(sg::JunkType::random_direction) == "random-direction");
  CHECK_THROWS_AS(sg::parse_cutoff("q50"), sg::UsageError);
}

TEST_CASE("the sink token's position is neither ranked nor corrupted") {
  const auto reads = random_reads(4);
  sg::CorruptionSpec spec{sg::JunkType::gaussian, sg::Cutoff::median, 0.4, 5, /*skip_positions=*/1};
  torch::Tensor mask;
  const auto out = sg::corrupt_reads(reads, spec, 0, 0, {}, &mask);
  check_changes(reads, out, 0.5, 0.4, /*skip=*/1);  // the reference ranks positions 1 … T-1 only
  CHECK(mask.select(2, 0).sum().item<int64_t>() == 0);
}

TEST_CASE("junk is keyed by (seed, layer, head, batch): the same key gives the same junk, another key other junk") {
  const auto reads = random_reads(5);
  for (auto junk : {sg::JunkType::structured, sg::JunkType::same_context, sg::JunkType::gaussian,
                    sg::JunkType::random_direction}) {
    INFO(sg::to_string(junk));
    sg::CorruptionSpec spec{junk, sg::Cutoff::median, 0.5, 11};
    const auto a = sg::corrupt_reads(reads, spec, 2, 3);
    CHECK(torch::equal(a, sg::corrupt_reads(reads, spec, 2, 3)));
    CHECK_FALSE(torch::equal(a, sg::corrupt_reads(reads, spec, 2, 4)));  // another batch
    CHECK_FALSE(torch::equal(a, sg::corrupt_reads(reads, spec, 1, 3)));  // another layer
    auto other = spec;
    other.seed = 12;
    CHECK_FALSE(torch::equal(a, sg::corrupt_reads(reads, other, 2, 3)));
  }
}
