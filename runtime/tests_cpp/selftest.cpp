// Self-test of the core engines with hand-registered kernels. From the repo root:
//   g++ -std=c++17 -O1 -Wall -Wextra -Iruntime/include runtime/src/core/*.cpp
//       runtime/tests_cpp/selftest.cpp -o /tmp/selftest && /tmp/selftest
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tensorsmith/allocator.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/isa.h"
#include "tensorsmith/parallel.h"
#include "tensorsmith/small_vector.h"
#include "tensorsmith/sort_rows.h"
#include "tensorsmith/testing.h"

using namespace ts;

namespace {

int g_failures = 0;
std::atomic<int> g_pointwise_calls{0};  // kernels may run on several threads

#define EXPECT(cond)                                                       \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ++g_failures;                                                        \
      std::cerr << __FILE__ << ":" << __LINE__ << ": FAILED " #cond "\n"; \
    }                                                                      \
  } while (0)

// Expects `expr` to throw `Err` whose message equals `msg` (or any message if empty).
#define EXPECT_THROW(expr, Err, msg)                                                              \
  do {                                                                                            \
    try {                                                                                         \
      (void)(expr);                                                                               \
      ++g_failures;                                                                               \
      std::cerr << __FILE__ << ":" << __LINE__ << ": no " #Err " from " #expr "\n";               \
    } catch (const Err& err) {                                                                    \
      if (std::string(msg) != "" && std::string(err.what()) != (msg)) {                            \
        ++g_failures;                                                                             \
        std::cerr << __FILE__ << ":" << __LINE__ << ": message '" << err.what() << "' != '" << msg << "'\n"; \
      }                                                                                           \
    }                                                                                             \
  } while (0)

// ---- Test kernels -------------------------------------------------------------

template <typename T>
T& at(char* p, int64_t i, int64_t stride) { return *reinterpret_cast<T*>(p + i * stride); }
template <typename T>
T at(const char* p, int64_t i, int64_t stride) { return *reinterpret_cast<const T*>(p + i * stride); }

template <typename T>
void add_kernel(char* const* d, const int64_t* s, int64_t n) {
  ++g_pointwise_calls;
  for (int64_t i = 0; i < n; ++i) at<T>(d[0], i, s[0]) = at<T>(d[1], i, s[1]) + at<T>(d[2], i, s[2]);
}

template <typename T>
void less_kernel(char* const* d, const int64_t* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) at<bool>(d[0], i, s[0]) = at<T>(d[1], i, s[1]) < at<T>(d[2], i, s[2]);
}

template <typename T>
void where_kernel(char* const* d, const int64_t* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    at<T>(d[0], i, s[0]) = at<bool>(d[1], i, s[1]) ? at<T>(d[2], i, s[2]) : at<T>(d[3], i, s[3]);
  }
}

template <typename In, typename Out>
void sum_kernel(const ReduceArgs& a) {
  for (int64_t i = 0; i < a.n_outer; ++i) {
    Out acc = 0;
    for (int64_t j = 0; j < a.n_reduce; ++j) acc += at<In>(a.in + i * a.in_outer_stride, j, a.in_reduce_stride);
    at<Out>(a.out, i, a.out_stride) = acc;
  }
}

template <typename T>
void max_kernel(const ReduceArgs& a) {
  for (int64_t i = 0; i < a.n_outer; ++i) {
    T acc = at<T>(a.in + i * a.in_outer_stride, 0, 0);
    for (int64_t j = 1; j < a.n_reduce; ++j) acc = std::max(acc, at<T>(a.in + i * a.in_outer_stride, j, a.in_reduce_stride));
    at<T>(a.out, i, a.out_stride) = acc;
  }
}

template <typename T>
void argmax_kernel(const ReduceArgs& a) {
  for (int64_t i = 0; i < a.n_outer; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < a.n_reduce; ++j) {
      if (at<T>(a.in + i * a.in_outer_stride, j, a.in_reduce_stride) >
          at<T>(a.in + i * a.in_outer_stride, best, a.in_reduce_stride)) {
        best = j;
      }
    }
    at<int64_t>(a.out, i, a.out_stride) = best;
  }
}

template <typename T>
void softmax_kernel(const RowArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const T* in = reinterpret_cast<const T*>(a.in) + r * a.cols;
    T* out = reinterpret_cast<T*>(a.out) + r * a.cols;
    T total = 0;
    for (int64_t c = 0; c < a.cols; ++c) total += out[c] = std::exp(in[c]);
    for (int64_t c = 0; c < a.cols; ++c) out[c] /= total;
  }
}

template <typename T>
void gemm_kernel(const GemmArgs& g) {
  for (int64_t b = 0; b < g.batch; ++b) {
    const T* A = reinterpret_cast<const T*>(g.a) + b * g.a_batch_stride;
    const T* B = reinterpret_cast<const T*>(g.b) + b * g.b_batch_stride;
    T* C = reinterpret_cast<T*>(g.c) + b * g.c_batch_stride;
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          acc += A[i * g.a_row_stride + p * g.a_col_stride] * B[p * g.b_row_stride + j * g.b_col_stride];
        }
        C[i * g.n + j] = acc;
      }
    }
  }
}

// A running sum of every (batch, inner) line, in the strides the engine hands over.
template <typename In, typename Out>
void cumsum_kernel(const ScanArgs& a) {
  for (int64_t b = 0; b < a.n_batch; ++b) {
    for (int64_t i = 0; i < a.n_inner; ++i) {
      const char* in = a.in + b * a.in_batch_stride + i * a.in_inner_stride;
      char* out = a.out + b * a.out_batch_stride + i * a.out_inner_stride;
      if (a.initial) at<Out>(out, 0, 0) = 0;
      Out acc = 0;
      for (int64_t j = 0; j < a.n_scan; ++j) {
        acc += static_cast<Out>(at<In>(in, j, a.in_scan_stride));
        at<Out>(out, j + (a.initial ? 1 : 0), a.out_scan_stride) = acc;
      }
    }
  }
}

struct PlainLess {
  static bool less(double a, double b) { return a < b; }
};

template <SortOutput kOutput>
void sort_kernel(const SortArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) ts::sorting::sort_row<PlainLess, double, double, kOutput>(a, r);
}

template <typename T>
void* erase(T* f) { return reinterpret_cast<void*>(f); }

// A test op's type table, one row per dtype: the kernel in the common dtype (`kernel_of`), the result from
// it (`result_of`); the generated registration writes these rows out from the specs.
template <typename KernelOf, typename ResultOf>
void with_table(OpDef& op, KernelOf kernel_of, ResultOf result_of) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType common = static_cast<DType>(i);
    const DType kernel = kernel_of(common);
    op.types[i] = TypeRule{common, kernel, result_of(kernel)};
  }
}

void register_test_ops(Registry& r) {
  constexpr auto cpu = DeviceType::CPU;
  const auto same = [](DType d) { return d; };
  const auto to_bool = [](DType) { return DType::Bool; };
  const auto to_int64 = [](DType) { return DType::Int64; };
  with_table(r.define("add", Family::Pointwise, 2, Promotion::Binary, false, 0x3u), same, same);
  r.set_kernel("add", cpu, DType::Float32, erase(&add_kernel<float>));
  r.set_kernel("add", cpu, DType::Float64, erase(&add_kernel<double>));
  r.set_kernel("add", cpu, DType::Int64, erase(&add_kernel<int64_t>));
  with_table(r.define("less", Family::Pointwise, 2, Promotion::Comparison, false, 0x3u), same, to_bool);
  r.set_kernel("less", cpu, DType::Float64, erase(&less_kernel<double>));
  with_table(r.define("where", Family::Pointwise, 3, Promotion::Where, false, 0x6u), same, same);
  r.set_kernel("where", cpu, DType::Float64, erase(&where_kernel<double>));
  with_table(r.define("sum", Family::Reduction, 1, Promotion::ReduceSum, true, 0x1u), same, sum_result_type);
  r.set_kernel("sum", cpu, DType::Float64, erase(&sum_kernel<double, double>));
  r.set_kernel("sum", cpu, DType::Int32, erase(&sum_kernel<int32_t, int64_t>));
  r.set_kernel("sum", cpu, DType::Int64, erase(&sum_kernel<int64_t, int64_t>));
  with_table(r.define("max", Family::Reduction, 1, Promotion::ReduceSame, false, 0x1u), same, same);
  r.set_kernel("max", cpu, DType::Float64, erase(&max_kernel<double>));
  with_table(r.define("argmax", Family::IndexReduction, 1, Promotion::ReduceIndex, false, 0x1u), same, to_int64);
  r.set_kernel("argmax", cpu, DType::Float64, erase(&argmax_kernel<double>));
  with_table(r.define("softmax", Family::Normalization, 1, Promotion::Float, false, 0x1u), float_result_type, same);
  r.set_kernel("softmax", cpu, DType::Float32, erase(&softmax_kernel<float>));
  r.set_kernel("softmax", cpu, DType::Float64, erase(&softmax_kernel<double>));
  with_table(r.define("cumulative_sum", Family::Scan, 1, Promotion::ReduceSum, true, 0x1u), same, sum_result_type);
  r.set_kernel("cumulative_sum", cpu, DType::Float64, erase(&cumsum_kernel<double, double>));
  r.set_kernel("cumulative_sum", cpu, DType::Int32, erase(&cumsum_kernel<int32_t, int64_t>));
  with_table(r.define("sort", Family::Sort, 1, Promotion::ReduceSame, false, 0x1u), same, same);
  r.set_kernel("sort", cpu, DType::Float64, erase(&sort_kernel<SortOutput::Values>));
  with_table(r.define("argsort", Family::Sort, 1, Promotion::ReduceIndex, false, 0x1u), same, to_int64);
  r.set_kernel("argsort", cpu, DType::Float64, erase(&sort_kernel<SortOutput::Positions>));
  with_table(r.define("matmul", Family::Contraction, 2, Promotion::Binary, false, 0x3u), same, same);
  r.set_kernel("matmul", cpu, DType::Float64, erase(&gemm_kernel<double>));
}

// ---- Tensor helpers -----------------------------------------------------------

// A contiguous tensor holding `values` cast to `dtype`.
Tensor make(const Shape& shape, const std::vector<double>& values, DType dtype = DType::Float64) {
  Tensor t = Tensor::empty(shape, DType::Float64);
  std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(double));
  return t.astype(dtype);
}

Tensor arange(const Shape& shape, DType dtype = DType::Float64) {
  Tensor t = Tensor::empty(shape, DType::Float64);
  for (int64_t i = 0; i < t.numel(); ++i) reinterpret_cast<double*>(t.data_ptr())[i] = static_cast<double>(i);
  return t.astype(dtype);
}

// Values in row-major order, read through float64.
std::vector<double> values(const Tensor& t) {
  const Tensor c = t.astype(DType::Float64);
  const double* p = reinterpret_cast<const double*>(c.data_ptr());
  return std::vector<double>(p, p + c.numel());
}

bool near(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::abs(a[i] - b[i]) > 1e-6 * (1 + std::abs(b[i]))) return false;
  }
  return true;
}

const OpDef& op(const char* name) { return Registry::global().get(name); }

// ---- Tests --------------------------------------------------------------------

void test_dtypes() {
  EXPECT(promote_types(DType::Int8, DType::UInt8) == DType::Int16);
  EXPECT(promote_types(DType::Int64, DType::UInt64) == DType::Float64);
  EXPECT(promote_types(DType::UInt32, DType::Int32) == DType::Int64);
  EXPECT(promote_types(DType::UInt16, DType::Float32) == DType::Float32);
  EXPECT(promote_types(DType::Int32, DType::Float32) == DType::Float64);
  EXPECT(promote_types(DType::Bool, DType::UInt8) == DType::UInt8);
  EXPECT(float_result_type(DType::Int16) == DType::Float32);
  EXPECT(float_result_type(DType::UInt64) == DType::Float64);
  EXPECT(float_result_type(DType::Int8) == DType::Float16);
  EXPECT(float_result_type(DType::BFloat16) == DType::BFloat16);
  EXPECT(promote_types(DType::Float16, DType::Int16) == DType::Float32);
  EXPECT(promote_types(DType::UInt8, DType::BFloat16) == DType::BFloat16);
  // ml_dtypes 0.7's np.result_type: bfloat16 with a 16-bit type is float32, with a wider integer float64.
  EXPECT(promote_types(DType::Float16, DType::BFloat16) == DType::Float32);
  EXPECT(promote_types(DType::Int16, DType::BFloat16) == DType::Float32);
  EXPECT(promote_types(DType::Int32, DType::BFloat16) == DType::Float64);
  EXPECT(sum_result_type(DType::Bool) == DType::Int64);
  EXPECT(sum_result_type(DType::UInt8) == DType::UInt64);
  EXPECT(dtype_from_name("uint16") == DType::UInt16);
  EXPECT(dtype_from_name("bfloat16") == DType::BFloat16);
  EXPECT_THROW(dtype_from_name("float8"), TypeError, "data type 'float8' not understood");
  EXPECT(parse_device("cuda:3") == (Device{DeviceType::CUDA, 3}));
  EXPECT(device_str(parse_device("cuda")) == "cuda:0");
  EXPECT_THROW(parse_device("cuda:x"), ValueError, "");
  EXPECT_THROW(parse_device("gpu"), ValueError, "");
}

void test_views() {
  const Tensor x = arange({2, 3});
  EXPECT(x.T().shape() == (Shape{3, 2}) && !x.T().is_contiguous());
  EXPECT(near(values(x.T()), {0, 3, 1, 4, 2, 5}));
  // reshape: a view when the strides allow it, else a copy.
  EXPECT(x.reshape({3, -1}).storage() == x.storage());
  EXPECT(x.T().reshape({-1}).storage() != x.storage());
  EXPECT(near(values(x.T().reshape({-1})), {0, 3, 1, 4, 2, 5}));
  const Tensor y = arange({4, 6}).slice(1, 0, std::nullopt, 2);  // (4, 3), strides (6, 2)
  EXPECT(y.reshape({2, 2, 3}).storage() == y.storage());
  EXPECT(y.reshape({2, 2, 3}).strides() == (Strides{12, 6, 2}));
  EXPECT(y.reshape({12}).storage() == y.storage() && y.reshape({12}).strides() == (Strides{2}));
  const Tensor z = arange({4, 6}).slice(1, 0, 2, 1);  // (4, 2), strides (6, 1)
  EXPECT(z.reshape({2, 4}).storage() != z.storage());
  EXPECT(near(values(z.reshape({2, 4})), {0, 1, 6, 7, 12, 13, 18, 19}));
  EXPECT_THROW(x.reshape({4}), ValueError, "cannot reshape tensor of size 6 into shape (4,)");
  EXPECT_THROW(x.reshape({-1, -1}), ValueError, "can only specify one unknown dimension");
  EXPECT_THROW(arange({0}).reshape({0, -1}), ValueError, "");
  // slice: Python semantics.
  const Tensor v = arange({5});
  EXPECT(near(values(v.slice(0, std::nullopt, std::nullopt, -1)), {4, 3, 2, 1, 0}));
  EXPECT(near(values(v.slice(0, -2, -100, -2)), {3, 1}));
  EXPECT(near(values(v.slice(0, 1, 100, 3)), {1, 4}));
  EXPECT(v.slice(0, 4, 1, 1).numel() == 0);
  EXPECT_THROW(v.slice(0, 0, 1, 0), ValueError, "slice step cannot be zero");
  // select, squeeze, unsqueeze, expand, permute.
  EXPECT(near(values(x.select(1, -1)), {2, 5}));
  EXPECT_THROW(arange({3}).select(0, 5), IndexError, "index 5 is out of bounds for axis 0 with size 3");
  EXPECT_THROW(x.select(3, 0), AxisError, "axis 3 is out of bounds for tensor of dimension 2");
  const Tensor u = x.unsqueeze(0).unsqueeze(-1);
  EXPECT(u.shape() == (Shape{1, 2, 3, 1}) && u.is_contiguous());
  EXPECT(u.squeeze(std::nullopt).shape() == (Shape{2, 3}));
  EXPECT(u.squeeze(std::vector<int64_t>{-1}).shape() == (Shape{1, 2, 3}));
  EXPECT_THROW(u.squeeze(std::vector<int64_t>{1}), ValueError, "");
  const Tensor e = arange({3, 1}).expand({2, 3, 4});
  EXPECT(e.strides() == (Strides{0, 1, 0}));
  EXPECT_THROW(arange({3}).expand({2}), ValueError, "");
  EXPECT_THROW(x.permute({0, 0}), ValueError, "repeated axis in transpose");
  EXPECT(arange({2, 3, 4}).permute({2, 0, 1}).shape() == (Shape{4, 2, 3}));
  EXPECT(arange({2, 3, 4}).matrix_transpose().strides() == (Strides{12, 1, 4}));
  EXPECT_THROW(x.as_strided({7}, {1}, 0), ValueError, "");
  EXPECT(shape_str({4}) == "(4,)" && shape_str({2, 3}) == "(2, 3)");
}

void test_copies() {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT(near(values(make({6}, {nan, inf, -inf, 1e20, -2.7, 2.7}).astype(DType::Int32)),
              {-2147483648.0, -2147483648.0, -2147483648.0, -2147483648.0, -2, 2}));
  EXPECT(near(values(make({4}, {-1, 255.9, 300, nan}).astype(DType::UInt8)), {255, 255, 44, 0}));
  EXPECT(near(values(make({3}, {-1, 1.8446744073709550e19, inf}).astype(DType::UInt64)),
              {18446744073709551615.0, 1.8446744073709550e19, 0}));
  EXPECT(near(values(make({3}, {nan, -9.3e18, -9.2e18}).astype(DType::Int64)), {-9223372036854775808.0, -9223372036854775808.0, -9.2e18}));
  EXPECT(near(values(make({3}, {nan, 0, -0.5}).astype(DType::Bool)), {1, 0, 1}));
  EXPECT(near(values(make({2}, {300, -1}, DType::Int32).astype(DType::UInt8)), {44, 255}));
  // copy_from broadcasts and casts; an overlapping source is read before it is written.
  Tensor sq = arange({3, 3});
  sq.copy_from(sq.T());
  EXPECT(near(values(sq), {0, 3, 6, 1, 4, 7, 2, 5, 8}));
  Tensor dst = Tensor::empty({2, 3}, DType::Int64);
  dst.copy_from(make({3}, {1.5, 2.5, -3.5}));
  EXPECT(near(values(dst), {1, 2, -3, 1, 2, -3}));
  // Writing through a transposed view.
  Tensor t = Tensor::empty({3, 2}, DType::Float32);
  t.T().copy_from(arange({2, 3}));
  EXPECT(near(values(t), {0, 3, 1, 4, 2, 5}));
  EXPECT(arange({2, 3}).contiguous().is_contiguous());
}

void test_pointwise() {
  const OpDef& add = op("add");
  g_pointwise_calls = 0;
  EXPECT(near(values(pointwise(add, {arange({2, 3}), arange({2, 3})})), {0, 2, 4, 6, 8, 10}));
  EXPECT(g_pointwise_calls == 1);  // contiguous: one run
  g_pointwise_calls = 0;
  EXPECT(near(values(pointwise(add, {arange({2, 3}), make({}, {10})})), {10, 11, 12, 13, 14, 15}));
  EXPECT(g_pointwise_calls == 1);  // a broadcast scalar still coalesces
  g_pointwise_calls = 0;
  const Tensor outer = pointwise(add, {make({3, 1}, {0, 10, 20}), make({1, 4}, {0, 1, 2, 3})});
  EXPECT(outer.shape() == (Shape{3, 4}));
  EXPECT(near(values(outer), {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}));
  EXPECT(g_pointwise_calls == 3);
  // Non-contiguous and negative-stride inputs.
  const Tensor rev = arange({3}).slice(0, std::nullopt, std::nullopt, -1);
  EXPECT(near(values(pointwise(add, {arange({3, 2}).T(), rev})), {2, 3, 4, 3, 4, 5}));
  // Promotion: int32 + float32 runs in float64.
  const Tensor mixed = pointwise(add, {arange({2}, DType::Int32), arange({2}, DType::Float32)});
  EXPECT(mixed.dtype() == DType::Float64 && near(values(mixed), {0, 2}));
  // 0-d and empty.
  const Tensor scalar = pointwise(add, {make({}, {1}), make({}, {2})});
  EXPECT(scalar.ndim() == 0 && near(values(scalar), {3}));
  g_pointwise_calls = 0;
  EXPECT(pointwise(add, {arange({0, 3}), arange({3})}).shape() == (Shape{0, 3}));
  EXPECT(g_pointwise_calls == 0);
  // Comparison and where.
  const Tensor lt = pointwise(op("less"), {arange({3}, DType::Int32), make({}, {1})});
  EXPECT(lt.dtype() == DType::Bool && near(values(lt), {1, 0, 0}));
  const Tensor w = pointwise(op("where"), {make({3}, {1, 0, 2}, DType::Int64), arange({3}), make({}, {-1})});
  EXPECT(w.dtype() == DType::Float64 && near(values(w), {0, -1, 2}));
  // Errors.
  EXPECT_THROW(pointwise(add, {arange({2, 3}), arange({4})}), ValueError,
               "operands could not be broadcast together with shapes (2,3) (4,)");
  EXPECT_THROW(pointwise(add, {arange({2}, DType::Int8), arange({2}, DType::Int8)}), NotImplementedError,
               "add is not implemented for device cpu and dtype int8");
  const Tensor on_cuda(std::make_shared<Storage>(nullptr, 0, Device{DeviceType::CUDA, 0}, nullptr), DType::Float64,
                       {0}, {1}, 0);
  EXPECT_THROW(pointwise(add, {arange({0}), on_cuda}), ValueError,
               "add: expected all inputs on one device, got cpu and cuda:0");
  EXPECT_THROW(pointwise(add, {arange({2})}), TypeError, "");
}

void test_reduce() {
  const OpDef& sum = op("sum");
  const Tensor x = arange({2, 3, 4});
  EXPECT(near(values(reduce(sum, x, std::nullopt, false)), {276}));
  EXPECT(near(values(reduce(sum, x, std::vector<int64_t>{1}, false)),
              {12, 15, 18, 21, 48, 51, 54, 57}));
  // Axes 0 and 2 of a contiguous tensor do not merge: a copy is reduced.
  const Tensor r02 = reduce(sum, x, std::vector<int64_t>{0, -1}, true);
  EXPECT(r02.shape() == (Shape{1, 3, 1}) && near(values(r02), {60, 92, 124}));
  // Permuted and negative-stride inputs.
  EXPECT(near(values(reduce(sum, x.permute({2, 0, 1}), std::vector<int64_t>{0}, false)),
              {6, 22, 38, 54, 70, 86}));
  EXPECT(near(values(reduce(sum, x.slice(2, std::nullopt, std::nullopt, -2), std::vector<int64_t>{2}, false)),
              {4, 12, 20, 28, 36, 44}));
  // Empty tuple: nothing reduced.
  EXPECT(near(values(reduce(sum, arange({2, 2}), std::vector<int64_t>{}, false)), {0, 1, 2, 3}));
  // Result dtypes and empty reductions.
  const Tensor si = reduce(sum, arange({3}, DType::Int32), std::nullopt, false);
  EXPECT(si.dtype() == DType::Int64 && si.ndim() == 0 && near(values(si), {3}));
  EXPECT(near(values(reduce(sum, arange({2, 0}), std::vector<int64_t>{1}, false)), {0, 0}));
  EXPECT(reduce(op("max"), arange({0, 3}), std::vector<int64_t>{1}, false).shape() == (Shape{0}));
  EXPECT_THROW(reduce(op("max"), arange({0, 3}), std::vector<int64_t>{0}, false), ValueError,
               "zero-size array to reduction operation max which has no identity");
  EXPECT_THROW(reduce(sum, x, std::vector<int64_t>{1, -2}, false), ValueError, "duplicate value in 'axis'");
  EXPECT(near(values(reduce(sum, make({}, {5}), std::nullopt, false)), {5}));
  // Index reductions.
  const OpDef& argmax = op("argmax");
  const Tensor m = make({2, 3}, {1, 9, 3, 7, 2, 8});
  EXPECT(near(values(index_reduce(argmax, m, std::nullopt, false)), {1}));
  EXPECT(index_reduce(argmax, m, std::nullopt, true).shape() == (Shape{1, 1}));
  EXPECT(near(values(index_reduce(argmax, m, 0, false)), {1, 0, 1}));
  const Tensor a1 = index_reduce(argmax, m.T(), -1, true);
  EXPECT(a1.dtype() == DType::Int64 && a1.shape() == (Shape{3, 1}) && near(values(a1), {1, 0, 1}));
  EXPECT(near(values(index_reduce(argmax, m.T(), std::nullopt, false)), {2}));
  EXPECT_THROW(index_reduce(argmax, arange({3, 0}), 1, false), ValueError, "attempt to get argmax of an empty sequence");
  EXPECT(index_reduce(argmax, arange({0, 3}), 1, false).shape() == (Shape{0}));
}

void test_normalize() {
  const OpDef& softmax = op("softmax");
  const Tensor s = normalize(softmax, make({2, 2}, {0, 1, 0, 3}), 0);
  EXPECT(near(values(s), {0.5, 1 / (1 + std::exp(2.0)), 0.5, 1 / (1 + std::exp(-2.0))}));
  const Tensor i16 = normalize(softmax, arange({2}, DType::Int16), -1);
  EXPECT(i16.dtype() == DType::Float32 && near(values(i16), {1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-1.0))}));
  const Tensor sc = normalize(softmax, make({}, {7}), -1);
  EXPECT(sc.ndim() == 0 && near(values(sc), {1}));
  EXPECT(normalize(softmax, arange({0, 3}), 1).shape() == (Shape{0, 3}));
  // int8 computes in float16, as numpy; this registry has no float16 softmax.
  EXPECT_THROW(normalize(softmax, arange({2}, DType::Int8), 0), NotImplementedError,
               "softmax is not implemented for device cpu and dtype float16");
  EXPECT_THROW(normalize(softmax, arange({2}), 1), AxisError, "");
}

void test_scan() {
  const OpDef& cumsum = op("cumulative_sum");
  const Tensor m = arange({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  EXPECT(near(values(scan(cumsum, m, 1, false)), {0, 1, 3, 3, 7, 12}));
  EXPECT(near(values(scan(cumsum, m, 0, false)), {0, 1, 2, 3, 5, 7}));
  const Tensor initial = scan(cumsum, m, -1, true);
  EXPECT(initial.shape() == (Shape{2, 4}) && near(values(initial), {0, 0, 1, 3, 0, 3, 7, 12}));
  EXPECT(near(values(scan(cumsum, m.T(), 0, false)), {0, 3, 1, 7, 3, 12}));  // a view: made contiguous first
  const Tensor ints = scan(cumsum, arange({4}, DType::Int32), std::nullopt, false);
  EXPECT(ints.dtype() == DType::Int64 && near(values(ints), {0, 1, 3, 6}));
  EXPECT(scan(cumsum, make({}, {7}), std::nullopt, true).shape() == (Shape{2}));  // 0-d: one element
  EXPECT(near(values(scan(cumsum, arange({2, 0}), 1, true)), {0, 0}));
  // Wider than a tile: tiles of columns and the batches in between go to the threads separately.
  // out[b, 1, i] = x[b, 0, i] + x[b, 1, i] = 4bw + w + 2i for x = arange over (3, 2, w).
  const int64_t w = 2 * limits::kScanTile + 3;
  const Tensor wide = scan(cumsum, arange({3, 2, w}), 1, false).select(0, 2).select(0, 1);
  EXPECT(near(values(wide.slice(0, 0, 2, 1)), {9.0 * w, 9.0 * w + 2}));
  EXPECT(near(values(wide.slice(0, w - 1, w, 1)), {9.0 * w + 2 * (w - 1)}));
  EXPECT_THROW(scan(cumsum, m, std::nullopt, false), ValueError,
               "For arrays which have more than one dimension ``axis`` argument is required.");
  EXPECT_THROW(scan(cumsum, m, 2, false), AxisError, "");
}

void test_sort() {
  const Tensor m = make({2, 4}, {3, 1, 2, 1, 0, 5, 5, -1});
  EXPECT(near(values(sort(op("sort"), m, -1, false)), {1, 1, 2, 3, -1, 0, 5, 5}));
  EXPECT(near(values(sort(op("sort"), m, 1, true)), {3, 2, 1, 1, 5, 5, 0, -1}));
  EXPECT(near(values(sort(op("sort"), m, 0, false)), {0, 1, 2, -1, 3, 5, 5, 1}));
  const Tensor positions = sort(op("argsort"), m, -1, false);
  EXPECT(positions.dtype() == DType::Int64 && near(values(positions), {1, 3, 2, 0, 3, 0, 1, 2}));  // ties in order
  EXPECT(near(values(sort(op("argsort"), m, -1, true)), {0, 2, 1, 3, 1, 2, 0, 3}));  // descending keeps ties in order too
  EXPECT(sort(op("sort"), arange({3, 0}), 1, false).shape() == (Shape{3, 0}));
  EXPECT_THROW(sort(op("sort"), make({}, {1}), -1, false), AxisError, "");
}

// sort_row's keyed path at each level (the network on short rows at AVX2 and AVX-512, radix passes on long ones;
// values alone by their keys, or keys with positions where some value does not come back from its key, -0.0
// here) against std::stable_sort by the same
// comparator: ties (-0.0 among the zeros) keep their order, ascending and descending. A comparator that is not
// numpy's order (here reversed) fails the radix path's check, and the row is sorted by the comparator after all.
struct ReversedLess {
  static bool less(double a, double b) { return a > b; }
};

// keyed: whether radix::sort_row sorts the row (and agrees with the comparator) when asked for kOutput.
template <typename Less, bool kDescending, SortOutput kOutput>
void check_long_sort(const std::vector<double>& row, bool keyed, isa::Level level) {
  const int64_t n = static_cast<int64_t>(row.size());
  std::vector<int64_t> expected(row.size());
  std::iota(expected.begin(), expected.end(), 0);
  std::stable_sort(expected.begin(), expected.end(), [&](int64_t a, int64_t b) {
    return kDescending ? Less::less(row[b], row[a]) : Less::less(row[a], row[b]);
  });
  constexpr bool kPositions = kOutput == SortOutput::Positions;
  std::vector<double> values(row.size());
  std::vector<int64_t> positions(row.size());
  std::vector<uint64_t> scratch(row.size() * kSortScratchPerElement / sizeof(uint64_t));
  SortArgs args{kPositions ? nullptr : reinterpret_cast<char*>(values.data()), kPositions ? positions.data() : nullptr,
                reinterpret_cast<const char*>(row.data()), 1, n, kDescending, reinterpret_cast<char*>(scratch.data())};
  EXPECT((ts::sorting::radix::sort_row<Less, double, double, kOutput, kDescending>(args, 0, level)) == keyed);
  ts::sorting::sort_row<Less, double, double, kOutput>(args, 0);
  if constexpr (kPositions) {
    EXPECT(positions == expected);
  } else {
    bool same_bits = true;
    for (int64_t i = 0; i < n; ++i) same_bits &= std::memcmp(&values[i], &row[expected[i]], sizeof(double)) == 0;
    EXPECT(same_bits);
  }
}

// keyed_values / keyed_positions: the same for a sort of the values / an argsort.
template <typename Less, bool kDescending>
void check_long_sort(const std::vector<double>& row, bool keyed_values, bool keyed_positions, isa::Level level) {
  check_long_sort<Less, kDescending, SortOutput::Values>(row, keyed_values, level);
  check_long_sort<Less, kDescending, SortOutput::Positions>(row, keyed_positions, level);
}

// The levels this CPU runs (the keyed path's network is taken at AVX2 and AVX-512 only).
std::vector<isa::Level> levels_here() {
  std::vector<isa::Level> levels{isa::Level::Baseline};
  for (const isa::Level level : {isa::Level::AVX2, isa::Level::AVX512}) {
    if (static_cast<int>(level) <= static_cast<int>(isa::hardware())) levels.push_back(level);
  }
  return levels;
}

void test_sort_radix() {
  for (const isa::Level level : levels_here()) {
    for (const int64_t n : {5, 100, 200, 3001}) {  // below and above the radix passes' kWideKeysFrom (512)
      for (const bool signed_zeros : {false, true}) {
        std::vector<double> row(n);
        for (int64_t i = 0; i < n; ++i) row[i] = static_cast<double>((i * 7919) % 37) - 18.0;  // 37 values, ties
        for (int64_t i = 0; signed_zeros && i < n; i += 5) row[i] = (i / 5) % 2 == 0 ? -0.0 : 0.0;
        // A short row of float64 with positions (or a -0.0) has no keyed way below kWideKeysFrom at AVX2 and
        // baseline: sort_row declines it (false) and the comparator sorts it.
        const bool keyed = n >= ts::sorting::radix::kWideKeysFrom ||
                           (ts::sorting::network::applies<uint64_t>(level, n) && !signed_zeros);
        const bool positions_keyed = n >= ts::sorting::radix::kWideKeysFrom;
        check_long_sort<PlainLess, false>(row, keyed, positions_keyed, level);
        check_long_sort<PlainLess, true>(row, keyed, positions_keyed, level);
        check_long_sort<ReversedLess, false>(row, false, false, level);
        check_long_sort<ReversedLess, true>(row, false, false, level);
      }
    }
  }
}

// The sorting network alone (sort_network.h) against std::sort, at each level this CPU has: 32- and 64-bit keys,
// every row length up to 300 and lengths around the chunks' powers of two up to the longest row it takes, keys
// drawn from few values (ties), from the whole range, and the padding's own value (all ones) among them. A wrong
// network would not show through sort_row: its check would send the row to the comparator sort.
template <typename U>
void check_network(isa::Level level) {
  std::mt19937_64 random(7);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 300; ++n) lengths.push_back(n);
  for (int64_t n = 512; n <= ts::sorting::network::longest_row<U>(level); n *= 2) {
    for (const int64_t d : {-1, 0, 1}) lengths.push_back(n + d);
  }
  for (const int64_t n : lengths) {
    if (!ts::sorting::network::applies<U>(level, n)) continue;
    for (const int kind : {0, 1, 2}) {
      std::vector<U> keys(2 * n);  // the network's room: the row and its padding
      for (int64_t i = 0; i < n; ++i) {
        const U drawn = static_cast<U>(random());
        keys[i] = kind == 0 ? drawn % 5 : kind == 1 ? drawn : (drawn % 3 == 0 ? static_cast<U>(~U(0)) : drawn);
      }
      std::vector<U> expected(keys.begin(), keys.begin() + n);
      std::sort(expected.begin(), expected.end());
      ts::sorting::network::sort(level, keys.data(), n);
      EXPECT(std::equal(expected.begin(), expected.end(), keys.begin()));
    }
  }
}

void test_sort_network() {
  for (const isa::Level level : levels_here()) {
    EXPECT(ts::sorting::network::applies<uint32_t>(level, 2) == (TS_ISA_VARIANTS && level != isa::Level::Baseline));
    if (level == isa::Level::Baseline) continue;
    check_network<uint32_t>(level);
    check_network<uint64_t>(level);
  }
}

void test_contract() {
  const OpDef& matmul = op("matmul");
  const Tensor a = arange({2, 3}), b = arange({3, 2});
  EXPECT(near(values(contract(matmul, a, b)), {10, 13, 28, 40}));
  EXPECT(near(values(contract(matmul, a.T().T(), b.T().T())), {10, 13, 28, 40}));
  EXPECT(near(values(contract(matmul, b.T(), a.T())), {10, 28, 13, 40}));  // transposed operands
  const Tensor v = contract(matmul, arange({3}), arange({3}));
  EXPECT(v.ndim() == 0 && near(values(v), {5}));
  EXPECT(near(values(contract(matmul, arange({2}), b.T())), {1, 3, 5}));
  EXPECT(contract(matmul, a, arange({3})).shape() == (Shape{2}));
  // Batch broadcasting: (2,1,2,3) @ (3,3,2) -> (2,3,2,2); A and B both partially broadcast.
  const Tensor ba = arange({2, 1, 2, 3}), bb = arange({3, 3, 2});
  const Tensor c = contract(matmul, ba, bb);
  EXPECT(c.shape() == (Shape{2, 3, 2, 2}));
  const std::vector<double> cv = values(c);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      const std::vector<double> expect = values(contract(matmul, ba.select(0, i).select(0, 0), bb.select(0, j)));
      EXPECT(near(std::vector<double>(cv.begin() + (i * 3 + j) * 4, cv.begin() + (i * 3 + j + 1) * 4), expect));
    }
  }
  // A shared 2-D operand against a batch.
  EXPECT(near(values(contract(matmul, a, arange({2, 3, 1}))), {5, 14, 14, 50}));
  // k == 0 gives zeros; int32 @ float32 runs in float64.
  EXPECT(near(values(contract(matmul, arange({2, 0}), arange({0, 2}))), {0, 0, 0, 0}));
  EXPECT(contract(matmul, arange({2}, DType::Int32), arange({2}, DType::Float32)).dtype() == DType::Float64);
  EXPECT_THROW(contract(matmul, make({}, {1}), arange({3})), ValueError,
               "matmul: Input operand 0 does not have enough dimensions (has 0, gufunc core with signature "
               "(n?,k),(k,m?)->(n?,m?) requires 1)");
  EXPECT_THROW(contract(matmul, arange({2, 4}), arange({3})), ValueError,
               "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
               "(n?,k),(k,m?)->(n?,m?) (size 3 is different from 4)");
  EXPECT_THROW(contract(matmul, arange({2, 2, 3}), arange({3, 3, 4})), ValueError, "");
}

// Bitwise equality of two tensors' bytes (same dtype and shape, contiguous).
bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.dtype() == cb.dtype() && ca.shape() == cb.shape() &&
         std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.numel() * ca.itemsize()) == 0;
}

void test_allocator() {
  namespace alloc = ts::allocator;
  EXPECT(reinterpret_cast<uintptr_t>(Tensor::empty({3}, DType::Int8).data_ptr()) % alloc::kAlignment == 0);
  EXPECT(reinterpret_cast<uintptr_t>(Tensor::empty({0}, DType::Int8).data_ptr()) % alloc::kAlignment == 0);
  // Blocks below kLargeBlock come from malloc, aligned by hand: aligned at every size, usable whole, and
  // freed through malloc's own pointer (ASan checks the writes and the frees). A size that rounds up to
  // kLargeBlock is a large block (2 MiB aligned; aligned_alloc refused it when it kept the small class).
  for (size_t n : {size_t{1}, size_t{15}, size_t{64}, size_t{65}, size_t{1000}, size_t{100000},
                   alloc::kLargeBlock - alloc::kAlignment, alloc::kLargeBlock - 1}) {
    void* p = alloc::allocate(n);
    const size_t alignment = n <= alloc::kLargeBlock - alloc::kAlignment ? alloc::kAlignment : alloc::kHugePage;
    EXPECT(reinterpret_cast<uintptr_t>(p) % alignment == 0);
    std::memset(p, 0x5A, n);
    alloc::release(p, n);
  }
  alloc::empty_cache();
  alloc::empty_cache();
  void* first = nullptr;
  {
    const Tensor big = Tensor::empty({3 << 20}, DType::UInt8);  // 3 MiB: rounded to 4 MiB
    first = big.data_ptr();
    EXPECT(reinterpret_cast<uintptr_t>(first) % alloc::kHugePage == 0);
    EXPECT(alloc::stats().cached_blocks == 0);
    std::memset(big.data_ptr(), 0, 3 << 20);
  }
  EXPECT(alloc::stats().cached_blocks == 1 && alloc::stats().cached_bytes == (size_t{4} << 20));
  {
    // Same rounded size: the cached block comes back, filled like new memory: with bytes from the seed's
    // stream (no byte repeated over and over, which a kernel could recognise), other bytes for another seed.
    testing::set_allocation_fill(1);
    const Tensor again = Tensor::empty({(7 << 19) / 8}, DType::Float64);  // 3.5 MiB
    testing::set_allocation_fill(2);
    const Tensor other = Tensor::empty({(7 << 19) / 8}, DType::Float64);
    testing::set_allocation_fill(std::nullopt);
    EXPECT(again.data_ptr() == first);
    EXPECT(alloc::stats().cached_blocks == 0);
    const auto* bytes = reinterpret_cast<const uint8_t*>(again.data_ptr());
    const auto* others = reinterpret_cast<const uint8_t*>(other.data_ptr());
    bool seen[256] = {};
    int distinct = 0, same = 0;
    for (int i = 0; i < 4096; ++i) {
      distinct += !seen[bytes[i]];
      seen[bytes[i]] = true;
      same += bytes[i] == others[i];
    }
    EXPECT(distinct > 200 && same < 64);
  }
  {
    // A medium block (from kMediumBlock, which glibc maps afresh and unmaps on free) is cached by its size
    // class, 1/8 of a power of two: 300000 bytes and 310000 both take 327680, the same block.
    alloc::empty_cache();
    void* medium = alloc::allocate(300000);
    std::memset(medium, 0x5A, 300000);
    alloc::release(medium, 300000);
    EXPECT(alloc::stats().cached_blocks == 1 && alloc::stats().cached_bytes == 327680);
    void* again = alloc::allocate(310000);
    EXPECT(again == medium && alloc::stats().cached_blocks == 0);
    std::memset(again, 0x5A, 327680);  // the whole class is the block's (ASan checks)
    alloc::release(again, 310000);
    void* bigger = alloc::allocate(327681);  // the next class: a block of its own
    EXPECT(bigger != medium);
    alloc::release(bigger, 327681);
    EXPECT(alloc::stats().cached_blocks == 2);
    alloc::empty_cache();  // through malloc's own pointers (ASan checks the frees)
    EXPECT(alloc::stats().cached_blocks == 0 && alloc::stats().cached_bytes == 0);
  }
  {
    // The gate's placements: a guarded block ends (starts) exactly at a no-access page; an exact one is as
    // long as asked (ASan, under which this runs, would report a write past it). Freed whatever placement
    // is in force by then.
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    testing::set_allocation_placement(testing::Placement::GuardAfter);
    const Tensor after = Tensor::empty({37}, DType::Int16);
    testing::set_allocation_placement(testing::Placement::GuardBefore);
    const Tensor before = Tensor::empty({37}, DType::Int16);
    testing::set_allocation_placement(testing::Placement::Exact);
    const Tensor exact = Tensor::empty({37}, DType::Int16);
    testing::set_allocation_placement(testing::Placement::Pooled);
    EXPECT((reinterpret_cast<uintptr_t>(after.data_ptr()) + 74) % page == 0);
    EXPECT(reinterpret_cast<uintptr_t>(before.data_ptr()) % page == 0);
    EXPECT(reinterpret_cast<uintptr_t>(exact.data_ptr()) % alloc::kAlignment == 0);
    std::memset(after.data_ptr(), 1, 74);
    std::memset(before.data_ptr(), 1, 74);
    std::memset(exact.data_ptr(), 1, 74);
  }
  {
    // A different size class is a fresh block; freed blocks beyond the limit go back to the OS.
    std::vector<Tensor> many;
    const size_t block = size_t{64} << 20;
    for (size_t total = 0; total <= alloc::stats().cache_limit; total += block) {
      many.push_back(Tensor::empty({static_cast<int64_t>(block)}, DType::UInt8));
    }
  }
  EXPECT(alloc::stats().cached_bytes <= alloc::stats().cache_limit);
  alloc::empty_cache();
  EXPECT(alloc::stats().cached_blocks == 0 && alloc::stats().cached_bytes == 0);
}

void test_small_vector() {
  using V = SmallVector<int64_t, 3>;
  const auto is = [](const V& v, std::vector<int64_t> want) { return std::vector<int64_t>(v.begin(), v.end()) == want; };
  V v{1, 2};
  const int64_t* inline_data = v.data();
  v.push_back(3);  // still inline
  EXPECT(is(v, {1, 2, 3}) && v.data() == inline_data && v.capacity() == 3);
  v.push_back(v[0]);  // grows onto the heap while reading one of its own elements
  EXPECT(is(v, {1, 2, 3, 1}) && v.data() != inline_data && v.capacity() >= 4);
  v.insert(v.begin() + 1, v.begin() + 2, v.end());  // a range of its own, inserted before itself
  EXPECT(is(v, {1, 3, 1, 2, 3, 1}));
  v.erase(v.begin(), v.begin() + 4);
  v.insert(v.end(), 9);
  EXPECT(is(v, {3, 1, 9}) && v.back() == 9 && v.front() == 3);
  const V heap = v;  // copies: the heap block is not shared
  V moved = std::move(v);
  EXPECT(moved == heap && v.empty() && is(v, {}));
  moved[0] = 7;
  EXPECT(heap[0] == 3 && moved != heap);
  V small{4, 5};
  V small_moved = std::move(small);  // inline elements are copied out
  EXPECT(is(small_moved, {4, 5}) && small.empty());
  small_moved = moved;  // onto the heap
  small_moved.resize(8, -1);
  EXPECT(is(small_moved, {7, 1, 9, -1, -1, -1, -1, -1}));
  small_moved = V(2, 6);  // back to two elements (the block is kept)
  EXPECT(is(small_moved, {6, 6}) && V(std::vector<int64_t>{1, 2}) == (V{1, 2}));
  EXPECT(is(V(heap.rbegin(), heap.rend()), {9, 1, 3}));
}

// The state (R running or runnable, S asleep, ...) of thread `tid` of this process, from /proc.
char thread_state(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

// What the thread that called parallel_for does while a worker still runs its range: the caller's state,
// read by that worker 30 ms in. (The caller's own range takes 5 ms, so a worker takes the other; '?' if
// none ever did.)
char caller_state_while_a_worker_runs() {
  const auto caller = static_cast<pid_t>(syscall(SYS_gettid));
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::atomic<char> seen{0};
    parallel_for(2, 1, [&](int64_t, int64_t) {
      if (static_cast<pid_t>(syscall(SYS_gettid)) == caller) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      seen = thread_state(caller);
    });
    if (seen != 0) return seen;
  }
  return '?';
}

// Runs of a gang of two, each after the pool's worker fell asleep, in which both jobs started on one CPU. The jobs
// then wait for each other without yielding, as OpenBLAS's do: on one CPU, until the scheduler's next tick.
int gangs_started_on_one_cpu(int runs) {
  int shared = 0;
  for (int run = 0; run < runs; ++run) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin window of 0
    int cpus[2] = {-1, -2};
    std::atomic<int> arrived{0};
    parallel_gang(2, [&](int j) {
      cpus[j] = sched_getcpu();
      ++arrived;
      while (arrived.load() < 2) {
      }
    });
    shared += cpus[0] == cpus[1];
  }
  return shared;
}

// How many CPUs each thread of a parallel_for may run on, the fewest.
int fewest_cpus_of_a_pool_thread() {
  std::atomic<int> fewest{CPU_SETSIZE};
  parallel_for(2, 1, [&](int64_t, int64_t) {
    cpu_set_t mask;
    const int count = pthread_getaffinity_np(pthread_self(), sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : 0;
    for (int seen = fewest.load(); count < seen && !fewest.compare_exchange_weak(seen, count);) {
    }
  });
  return fewest.load();
}

void test_gang_placement() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
    std::cout << "skipped the gang placement test: it needs two CPUs this process may run on\n";
    return;
  }
  // The default thread count is the CPUs this process may run on.
  EXPECT(num_threads() == CPU_COUNT(&allowed));
  const int saved = num_threads();
  setenv("TS_SPIN_MS", "0", 1);  // the worker sleeps between runs, and wakes where the scheduler puts it
  set_num_threads(2);
  // A job that shares its CPU with another moves for its run, so none starts on one CPU with another; the
  // scheduler may still move a thread in the microseconds before a job reads its CPU, rarely.
  EXPECT(gangs_started_on_one_cpu(100) <= 3);
  cpu_set_t after;
  EXPECT(pthread_getaffinity_np(pthread_self(), sizeof(after), &after) == 0 && CPU_EQUAL(&allowed, &after));
  EXPECT(fewest_cpus_of_a_pool_thread() == CPU_COUNT(&allowed));  // a job that moved is free again after its run
  unsetenv("TS_SPIN_MS");
  set_num_threads(saved);
}

// Whether a parallel_for of two ranges ran them side by side: each range waits up to 200 ms for the other to
// start (on the pool they run at once; run serially, the first gives up and the second finds it done).
bool ranges_met() {
  std::atomic<int> started{0};
  std::atomic<bool> met{true};
  parallel_for(2, 1, [&](int64_t, int64_t) {
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (started.load() < 2) met = false;
  });
  return met.load();
}

// Two callers at once (another thread's parallel_for is inside its range): with fewer threads than twice the
// callers, each runs its ranges serially on its own thread, for 20 ms after the last overlap; then a lone caller
// has the pool again.
void test_overlapping_callers() {
  const int saved = num_threads();
  set_num_threads(2);
  EXPECT(ranges_met());  // alone: the pool runs both ranges at once
  std::atomic<bool> inside{false}, leave{false};
  std::thread other([&] {
    parallel_for(2, 1, [&](int64_t begin, int64_t) {
      if (begin != 0) return;
      inside = true;
      while (!leave.load()) std::this_thread::yield();
    });
  });
  while (!inside.load()) std::this_thread::yield();
  const std::thread::id self = std::this_thread::get_id();
  std::atomic<int> ranges_here{0};
  const auto overlap = std::chrono::steady_clock::now();  // the call below marks the overlap at this time or later
  parallel_for(1000, 10, [&](int64_t, int64_t) { ranges_here += std::this_thread::get_id() == self; });
  EXPECT(ranges_here == 2);  // both ranges on this thread
  leave = true;
  other.join();
  // Still serial within the window (checked only where this thread got here in time: a loaded machine may pause it).
  const bool within = std::chrono::steady_clock::now() - overlap < std::chrono::milliseconds(15);
  const bool met = ranges_met();
  EXPECT(!within || !met);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT(ranges_met());
  set_num_threads(saved);
}

void test_parallel() {
  const int saved = num_threads();
  EXPECT(saved >= 1);
  EXPECT_THROW(set_num_threads(0), ValueError, "the number of threads must be at least 1, got 0");
  set_num_threads(4);
  EXPECT(num_threads() == 4);
  // Every index exactly once, in at most one range per thread.
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<int> ranges{0};
  parallel_for(1000, 10, [&](int64_t b, int64_t e) {
    ++ranges;
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  bool once = true;
  for (const auto& h : hits) once = once && h == 1;
  EXPECT(once && ranges >= 2 && ranges <= 4);
  // Below two grains, and inside a worker: one serial call.
  ranges = 0;
  parallel_for(15, 10, [&](int64_t b, int64_t e) { ranges += (b == 0 && e == 15) ? 1 : 100; });
  EXPECT(ranges == 1);
  std::atomic<int> nested{0};
  parallel_for(100, 1, [&](int64_t, int64_t) { parallel_for(100, 1, [&](int64_t b, int64_t e) { nested += (b == 0 && e == 100); }); });
  EXPECT(nested >= 2);
  EXPECT_THROW(parallel_for(100, 1, [](int64_t b, int64_t) { TS_CHECK(b == 0, ValueError, "range " << b); }), ValueError, "");

  // A gang's jobs run at once, each on its own thread: jobs that wait for every other job to arrive finish (run
  // one after another, they would wait forever) on the pool, with more jobs than threads, and inside a worker.
  const auto gang_meets = [](int jobs) {
    std::atomic<int> arrived{0};
    std::vector<std::thread::id> ids(static_cast<size_t>(jobs));
    parallel_gang(jobs, [&](int j) {
      ++arrived;
      while (arrived.load() < jobs) std::this_thread::yield();
      ids[static_cast<size_t>(j)] = std::this_thread::get_id();
    });
    std::sort(ids.begin(), ids.end());
    return std::unique(ids.begin(), ids.end()) == ids.end();
  };
  for (int run = 0; run < 20; ++run) EXPECT(gang_meets(4) && gang_meets(2) && gang_meets(1));
  EXPECT(gang_meets(7));  // more jobs than the 4 threads: threads made for the call
  std::atomic<int> nested_gangs{0};
  parallel_for(4, 1, [&](int64_t, int64_t) { nested_gangs += gang_meets(3); });
  EXPECT(nested_gangs == 4);
  EXPECT_THROW(parallel_gang(3, [](int j) { TS_CHECK(j != 1, ValueError, "job " << j); }), ValueError, "job 1");
  EXPECT(gang_meets(4));  // the pool is whole after a job threw

  // Engines: the same bytes for 1 and 4 threads, floats included (splits are fixed by the shape).
  const auto both = [](const std::function<Tensor()>& f) {
    set_num_threads(1);
    const Tensor one = f();
    set_num_threads(4);
    return same_bytes(one, f());
  };
  const Tensor big = arange({600000}, DType::Int64);
  EXPECT(both([&] { return pointwise(op("add"), {big, big}); }));
  EXPECT(both([&] { return pointwise(op("add"), {arange({1000, 300}), arange({1000, 1}).expand({1000, 300})}); }));
  EXPECT(both([&] { return pointwise(op("add"), {arange({700, 500}).T(), arange({500, 700})}); }));
  const Tensor total = reduce(op("sum"), big, std::nullopt, false);  // split into chunks
  EXPECT(total.dtype() == DType::Int64 && values(total)[0] == 599999.0 * 600000.0 / 2);
  EXPECT(both([&] { return reduce(op("sum"), arange({600000}).slice(0, std::nullopt, std::nullopt, -1), std::nullopt, false); }));
  EXPECT(both([&] { return reduce(op("sum"), arange({400, 900}), std::vector<int64_t>{0}, false); }));
  EXPECT(both([&] { return reduce(op("max"), arange({3, 300000}), std::vector<int64_t>{1}, false); }));
  EXPECT(near(values(reduce(op("max"), arange({2, 300000}), std::vector<int64_t>{1}, false)), {299999, 599999}));
  EXPECT(both([&] { return index_reduce(op("argmax"), arange({900, 400}), 0, false); }));
  EXPECT(both([&] { return normalize(op("softmax"), arange({3000, 40}), -1); }));

  // The idle workers' spin window is read when a pool is made: a bad value throws there (and keeps the
  // old pool); 0 makes workers sleep at once, and runs still cover every index exactly once.
  const auto count_ranges = [] {
    std::atomic<int64_t> sum{0};
    parallel_for(1000, 10, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
    return sum.load();
  };
  setenv("TS_SPIN_MS", "soon", 1);
  set_num_threads(3);
  EXPECT_THROW(count_ranges(), ValueError, "TS_SPIN_MS must be a whole number of milliseconds from 0 to 60000, got 'soon' (not a whole decimal number)");
  setenv("TS_SPIN_MS", "0", 1);
  for (int run = 0; run < 50; ++run) EXPECT(count_ranges() == 999 * 1000 / 2);
  // The caller waits for the workers' ranges like an idle worker: polling through the spin window (its
  // CPU would go idle asleep, and waking it took about 20 us), asleep at once with a window of 0.
  EXPECT(caller_state_while_a_worker_runs() == 'S');
  setenv("TS_SPIN_MS", "200", 1);
  set_num_threads(2);
  EXPECT(caller_state_while_a_worker_runs() == 'R');
  unsetenv("TS_SPIN_MS");
  set_num_threads(saved);
}

void test_isa() {
#if TS_ISA_VARIANTS
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma");
  const isa::Level want = avx512 ? isa::Level::AVX512 : avx2 ? isa::Level::AVX2 : isa::Level::Baseline;
  EXPECT(isa::detect() == want);
  std::cout << "kernel ISA level: " << isa::name(isa::detect()) << "\n";
#else
  EXPECT(isa::detect() == isa::Level::Baseline);
#endif
}

void test_registry() {
  Registry& r = Registry::global();
  EXPECT(&r.define("add", Family::Pointwise, 2, Promotion::Binary, false, 0x3u) == &r.get("add"));
  EXPECT_THROW(r.define("add", Family::Pointwise, 1, Promotion::Binary, false, 0x3u), ValueError, "");
  EXPECT_THROW(r.define("add", Family::Pointwise, 2, Promotion::Binary, false, 0x1u), ValueError, "");
  // the type table: a second definition must give the same rows; a dtype without a row is not implemented
  EXPECT(op("add").type_rule(DType::Int64).result == DType::Int64 && op("less").type_rule(DType::Int8).result == DType::Bool);
  EXPECT_THROW(r.get("add").with_types({{DType::Int64, DType::Float64, DType::Float64}}), ValueError, "");
  OpDef& bare = r.define("no_rows", Family::Pointwise, 1, Promotion::Same, false, 0x1u);
  EXPECT_THROW(bare.type_rule(DType::Float32), NotImplementedError, "no_rows is not implemented for inputs of dtype float32");
  EXPECT(!r.get("where").promotes(0) && r.get("where").promotes(1) && r.get("where").promotes(2));
  EXPECT_THROW(r.get("nope"), NotImplementedError, "");
  const auto ops = r.ops();
  EXPECT(ops.size() == 12 && ops.front()->name == "add" && ops.back()->name == "where");
  EXPECT(op("add").has_kernel(DeviceType::CPU, DType::Int64) && !op("add").has_kernel(DeviceType::CUDA, DType::Int64));
}

// The engine's domain check (OpDef::check_domain): integers compare in their own type against the bounds rounded
// inward, for any bounds, however far outside the type's range; NaN is inside; a view holds only its own values.
template <typename T>
Tensor tensor_of(const std::vector<T>& values, DType dtype) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, dtype);
  std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  return t;
}

bool outside_domain(const Tensor& t, double low, double high) {
  OpDef probe{"domain_probe", Family::Pointwise, 1, Promotion::Same, false, 0x1u, {}, {}, {}};
  probe.require(DomainRule{0, (1u << kNumDTypes) - 1, low, high, "outside"});
  try {
    probe.check_domain({t}, t.dtype());
    return false;
  } catch (const ValueError&) {
    return true;
  }
}

void test_domain() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const Tensor i8 = tensor_of<int8_t>({-128, 0, 5, 127}, DType::Int8);
  EXPECT(outside_domain(i8, 0, kInf) && !outside_domain(i8, -128, 127) && !outside_domain(i8, -kInf, kInf));
  EXPECT(!outside_domain(i8, -128.5, 127.5) && outside_domain(i8, -127.5, kInf) && outside_domain(i8, -kInf, 126.5));
  EXPECT(outside_domain(i8, 127.5, kInf) && outside_domain(i8, -kInf, -128.5) && outside_domain(i8, 0.2, 0.8));
  const Tensor i64 = tensor_of<int64_t>({std::numeric_limits<int64_t>::min(), 0, std::numeric_limits<int64_t>::max()},
                                        DType::Int64);
  EXPECT(!outside_domain(i64, -0x1p63, 0x1p63) && outside_domain(i64, 0x1p63, kInf));
  EXPECT(outside_domain(i64, -kInf, -0x1p63 - 4096.0) && outside_domain(i64, -0x1p63 + 1024.0, kInf));
  const Tensor u64 = tensor_of<uint64_t>({0, std::numeric_limits<uint64_t>::max()}, DType::UInt64);
  EXPECT(!outside_domain(u64, 0, 0x1p64) && outside_domain(u64, 0x1p64, kInf) && outside_domain(u64, 1, kInf));
  EXPECT(outside_domain(u64, 0, 0x1p64 - 4096.0) && outside_domain(u64, -kInf, -1));
  const Tensor f32 = tensor_of<float>({std::nanf(""), 1.5f, -0.0f}, DType::Float32);
  EXPECT(!outside_domain(f32, 0, kInf) && outside_domain(f32, 2, kInf) && outside_domain(f32, -kInf, 1));
  const Tensor bools = tensor_of<uint8_t>({1, 0}, DType::Bool);  // through a float64 copy
  EXPECT(!outside_domain(bools, 0, 1) && outside_domain(bools, 0.5, 1));
  const Tensor i16 = tensor_of<int16_t>({0, -1, 0, -1, 0}, DType::Int16);
  EXPECT(!outside_domain(i16.slice(0, 0, std::nullopt, 2), 0, kInf) && outside_domain(i16.slice(0, 1, std::nullopt, 2), 0, kInf));
  EXPECT(!outside_domain(i16.slice(0, 4, std::nullopt, 1), 0, kInf));  // an offset view of one element
}

}  // namespace

int main() {
  register_test_ops(Registry::global());
  test_dtypes();
  test_views();
  test_copies();
  test_pointwise();
  test_reduce();
  test_normalize();
  test_scan();
  test_sort();
  test_sort_radix();
  test_sort_network();
  test_contract();
  test_registry();
  test_domain();
  test_allocator();
  test_small_vector();
  test_gang_placement();
  test_parallel();
  test_overlapping_callers();
  test_isa();
  if (g_failures) {
    std::cerr << g_failures << " failure(s)\n";
    return 1;
  }
  std::cout << "all tests passed\n";
  return 0;
}
