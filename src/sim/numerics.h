#pragma once
// Float habits of the published analysis (Python and numpy), reproduced exactly so that our
// curves can be compared with the published ones to the last digit.

#include <cstdint>
#include <span>

namespace gpufleet::sim {

// Python's round(x, 2): the double nearest to x rounded half-to-even to 2 decimals, decided on
// the exact binary value of x.
double PythonRound2(double x);
// numpy's round(x, 2): rint(x * 100) / 100, the product rounded to double first.
double NumpyRound2(double x);
// Python's round(x) for an integer result: half to even.
int64_t RoundHalfEven(double x);
// numpy's pairwise summation (as np.add.reduce on a contiguous float64 array).
double NumpyPairwiseSum(std::span<const double> values);

}  // namespace gpufleet::sim
