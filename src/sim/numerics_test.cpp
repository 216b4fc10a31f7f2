#include "sim/numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"

namespace gpufleet::sim {
namespace {

TEST(NumericsTest, PythonRound2MatchesPython) {
  // Values from CPython 3: round(x, 2) decides on the exact binary value of x.
  EXPECT_EQ(PythonRound2(2.675), 2.67);  // 2.67499999...
  EXPECT_EQ(PythonRound2(0.125), 0.12);  // exactly half: to even
  EXPECT_EQ(PythonRound2(0.375), 0.38);  // exactly half: to even
  EXPECT_EQ(PythonRound2(1.005), 1.0);
  EXPECT_EQ(PythonRound2(1.115), 1.11);
  EXPECT_EQ(PythonRound2(91.975), 91.97);
  EXPECT_EQ(PythonRound2(-2.675), -2.67);
  EXPECT_EQ(PythonRound2(38.63636363636363), 38.64);
  EXPECT_EQ(PythonRound2(0.0), 0.0);
  EXPECT_EQ(PythonRound2(100.0), 100.0);
}

TEST(NumericsTest, NumpyRound2RoundsTheScaledProduct) {
  // numpy: rint(x * 100) / 100, where x * 100 is rounded to double first.
  EXPECT_EQ(NumpyRound2(2.675), 2.68);
  EXPECT_EQ(NumpyRound2(1.115), 1.12);
  EXPECT_EQ(NumpyRound2(91.975), 91.98);
  EXPECT_EQ(NumpyRound2((91.97 + 91.98) / 2), 91.98);
  EXPECT_EQ(NumpyRound2(0.125), 0.12);
  EXPECT_EQ(NumpyRound2(0.375), 0.38);
  EXPECT_EQ(NumpyRound2(1.005), 1.0);
  EXPECT_EQ(NumpyRound2(-2.675), -2.68);
}

TEST(NumericsTest, RoundHalfEven) {
  EXPECT_EQ(RoundHalfEven(2.5), 2);
  EXPECT_EQ(RoundHalfEven(3.5), 4);
  EXPECT_EQ(RoundHalfEven(0.5), 0);
  EXPECT_EQ(RoundHalfEven(-2.5), -2);
  EXPECT_EQ(RoundHalfEven(2.4999999), 2);
  EXPECT_EQ(RoundHalfEven(2.5000001), 3);
  EXPECT_EQ(RoundHalfEven(130.0), 130);
}

// numpy's pairwise_sum (numpy/core/src/umath/loops_utils.h.src), written out independently:
// blocks of up to 128 use 8 interleaved accumulators; longer runs split at a multiple of 8.
double ReferencePairwise(const double* a, size_t n) {
  if (n < 8) {
    double s = -0.0;
    for (size_t i = 0; i < n; ++i) s += a[i];
    return s;
  }
  if (n <= 128) {
    std::vector<double> acc(a, a + 8);
    size_t i = 8;
    const size_t whole = n - n % 8;
    while (i < whole) {
      for (size_t lane = 0; lane < 8; ++lane) acc[lane] += a[i + lane];
      i += 8;
    }
    double s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; ++i) s += a[i];
    return s;
  }
  const size_t half = n / 2 - (n / 2) % 8;
  return ReferencePairwise(a, half) + ReferencePairwise(a + half, n - half);
}

TEST(NumericsTest, PairwiseSumEqualsPlainSumOnExactValues) {
  std::vector<double> v;
  for (int n = 0; n < 40; ++n) {
    double plain = 0;
    for (double x : v) plain += x;
    EXPECT_EQ(NumpyPairwiseSum(v), plain) << n;
    v.push_back(n * 0.25);  // small multiples of 1/4: every partial sum is exact
  }
}

TEST(NumericsTest, PairwiseSumMatchesNumpyOrder) {
  // 1e16 + 1 rounds back to 1e16, so the order of additions shows: numpy gives 1e16 + 8.
  std::vector<double> v = {1e16, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(NumpyPairwiseSum(v), 1e16 + 8);
  core::Rng rng(2024);
  std::vector<double> values;
  int differs_from_plain = 0;
  for (size_t n = 1; n <= 300; ++n) {
    // Percent-like values with two decimals, as the bucket means sum them.
    values.push_back(std::round(rng.Uniform() * 10000) / 100);
    const double got = NumpyPairwiseSum(values);
    EXPECT_EQ(got, ReferencePairwise(values.data(), n)) << "n = " << n;
    double plain = 0;
    for (double x : values) plain += x;
    differs_from_plain += got != plain;
  }
  EXPECT_GT(differs_from_plain, 0) << "the inputs should tell pairwise from plain summation";
}

}  // namespace
}  // namespace gpufleet::sim
