// Exceptions the runtime throws; the Python module maps each to the Python
// exception of the same name (AxisError -> numpy-style AxisError subclass of
// ValueError and IndexError).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ts {

struct ValueError : std::runtime_error { using std::runtime_error::runtime_error; };
struct TypeError : std::runtime_error { using std::runtime_error::runtime_error; };
struct IndexError : std::runtime_error { using std::runtime_error::runtime_error; };
struct AxisError : std::runtime_error { using std::runtime_error::runtime_error; };
struct NotImplementedError : std::runtime_error { using std::runtime_error::runtime_error; };
// A failure of the device or its driver (a CUDA error); Python's RuntimeError.
struct RuntimeError : std::runtime_error { using std::runtime_error::runtime_error; };

// TS_CHECK(cond, ErrorType, "message " << value): throw ErrorType with the message.
#define TS_CHECK(cond, Err, msg)            \
  do {                                      \
    if (!(cond)) {                          \
      std::ostringstream ts_check_os_;      \
      ts_check_os_ << msg;                  \
      throw ::ts::Err(ts_check_os_.str());  \
    }                                       \
  } while (0)

}  // namespace ts
