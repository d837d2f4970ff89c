// Everything a generated kernel translation unit may include: the dispatch
// table and kernel signatures, dtypes, and the scalar helpers spec expressions use.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>

#include "tensorsmith/dispatch.h"
#include "tensorsmith/dtype.h"
#include "tensorsmith/isa.h"
#include "tensorsmith/scalar_ops.h"
