#include "sim/numerics.h"

#include <cmath>

namespace gpufleet::sim {

double PythonRound2(double x) {
  // x has a 53-bit significand and 100 needs 7 bits, so the product is exact in the 64-bit
  // significand of x87 long double; rintl then rounds the exact value half to even.
  static_assert(sizeof(long double) > sizeof(double), "needs x87 extended precision");
  const long double scaled = static_cast<long double>(x) * 100.0L;
  return static_cast<double>(std::rint(scaled)) / 100.0;
}

double NumpyRound2(double x) { return std::rint(x * 100.0) / 100.0; }

int64_t RoundHalfEven(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

double NumpyPairwiseSum(std::span<const double> a) {
  const size_t n = a.size();
  if (n < 8) {
    double res = 0.0;  // numpy starts from -0.0, which only differs for an all-negative-zero sum
    for (double v : a) res += v;
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int i = 0; i < 8; ++i) r[i] = a[i];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t half = n / 2;
  half -= half % 8;
  return NumpyPairwiseSum(a.subspan(0, half)) + NumpyPairwiseSum(a.subspan(half));
}

}  // namespace gpufleet::sim
