#pragma once
// Invariant checks that abort loudly. Expected failures are values (see result.h); a failed
// GPUFLEET_CHECK means the program itself is wrong.

#include <cstdio>
#include <cstdlib>

#define GPUFLEET_CHECK(cond)                                                              \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
