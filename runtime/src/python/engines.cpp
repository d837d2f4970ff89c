// The engines as the bindings call them: the arguments are converted to tensors first, with the GIL, and
// the engine then runs without it when its inputs are large enough for another Python thread to gain
// (a data loader, a server). The engines touch no Python object, so results are the same either way.
#include <atomic>
#include <chrono>
#include <thread>

#include "bindings.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

// How long a thread that finished its engine polls for the GIL's holder to release it (see GilReleased): longer
// than the Python code between two ops of a loop, short enough that a thread kept waiting by a long Python
// computation elsewhere wastes little of its CPU before it sleeps as usual. None where TS_SPIN_MS is 0.
constexpr auto kGilHandOverSpin = std::chrono::microseconds(100);

std::atomic<uint64_t> g_gil_releases{0};  // engines entered without the GIL, by any thread
std::atomic<int> g_without_gil{0};        // threads inside an engine without the GIL now
thread_local uint64_t t_own_release = 0;  // g_gil_releases just after this thread's last release

// Returns when taking the GIL back will likely not sleep: once another thread is inside an engine (the GIL is
// free) or releases the GIL for its next one, or after kGilHandOverSpin (it is doing something else).
void await_gil_hand_over() {
  if (!idle_threads_poll()) return;
  const uint64_t seen = g_gil_releases.load(std::memory_order_acquire);
  const auto deadline = std::chrono::steady_clock::now() + kGilHandOverSpin;
  while (g_without_gil.load(std::memory_order_acquire) == 0 && g_gil_releases.load(std::memory_order_acquire) == seen) {
    if (std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::yield();
  }
}

// dtype=: None, or the dtype the input is cast to before the engine runs and its result after. Casting the
// result too keeps the standard's result dtype where the engine accumulates wider (an int8 sum is int64, and
// its wrap-around to int8 is the int8 sum numpy computes).
std::optional<DType> requested_dtype(py::handle dtype) {
  if (dtype.is_none()) return std::nullopt;
  return dtype_arg(dtype);
}

Tensor in_dtype(const Tensor& t, std::optional<DType> dtype) { return dtype && t.dtype() != *dtype ? t.astype(*dtype) : t; }

}  // namespace

GilReleased::GilReleased() : state_(PyEval_SaveThread()) {
  // Counted once the GIL is free: a thread waiting for this release then finds it free.
  const uint64_t before = g_gil_releases.fetch_add(1, std::memory_order_acq_rel);
  others_ = before != t_own_release;  // another thread released it for an engine since this thread's last release
  release_ = t_own_release = before + 1;
  g_without_gil.fetch_add(1, std::memory_order_acq_rel);
}

GilReleased::~GilReleased() {
  g_without_gil.fetch_sub(1, std::memory_order_acq_rel);
  // Another thread runs engines too (it released the GIL before or during this engine): it may hold the GIL now.
  if (others_ || g_gil_releases.load(std::memory_order_acquire) != release_) await_gil_hand_over();
  PyEval_RestoreThread(state_);
}

Tensor reduce(const OpDef& op, const Tensor& x, const std::optional<std::vector<int64_t>>& axes, bool keepdims,
              py::handle dtype) {
  const std::optional<DType> to = requested_dtype(dtype);
  return without_gil_if_large(x.numel(), [&] { return in_dtype(ts::reduce(op, in_dtype(x, to), axes, keepdims), to); });
}

Tensor index_reduce(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool keepdims) {
  return without_gil_if_large(x.numel(), [&] { return ts::index_reduce(op, x, axis, keepdims); });
}

Tensor normalize(const OpDef& op, const Tensor& x, int64_t axis) {
  return without_gil_if_large(x.numel(), [&] { return ts::normalize(op, x, axis); });
}

Tensor standardize(const OpDef& op, const std::vector<Tensor>& inputs, double eps) {
  int64_t numel = 0;
  for (const Tensor& t : inputs) numel += t.numel();
  return without_gil_if_large(numel, [&] { return ts::standardize(op, inputs, eps); });
}

Tensor contract(const OpDef& op, const Tensor& a, const Tensor& b) {
  return without_gil_if_large(a.numel() + b.numel(), [&] { return ts::contract(op, a, b); });
}

Tensor scan(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool include_initial, py::handle dtype) {
  const std::optional<DType> to = requested_dtype(dtype);
  return without_gil_if_large(x.numel(), [&] { return in_dtype(ts::scan(op, in_dtype(x, to), axis, include_initial), to); });
}

Tensor sort(const OpDef& op, const Tensor& x, int64_t axis, bool descending, bool /*stable*/) {
  return without_gil_if_large(x.numel(), [&] { return ts::sort(op, x, axis, descending); });
}

py::object update(const OpDef& op, std::initializer_list<py::handle> args, std::initializer_list<const char*> names,
                  const std::vector<double>& scalars) {
  std::vector<Tensor> operands;
  const char* const* name = names.begin();
  const int states = op.arity - 1;
  int64_t elements = 0;
  for (py::handle arg : args) {
    // A converted array-like would be a copy: the update would be lost with it.
    TS_CHECK(py::isinstance<Tensor>(arg), TypeError,
             op.name << ": " << *name << " must be a tensorsmith Tensor, not " << type_name(arg));
    if (static_cast<int>(operands.size()) < states) refuse_inplace_on_grad(arg, op.name.c_str());
    operands.push_back(arg.cast<Tensor>());
    elements += operands.back().numel();
    ++name;
  }
  without_gil_if_large(elements, [&] { ts::update(op, operands, scalars); });
  for (int k = 0; k < states; ++k) operands[k].storage()->bump_version();
  return py::reinterpret_borrow<py::object>(*args.begin());
}

void bind_engine_settings(py::module_& m) {
  m.def("get_num_threads", &ts::num_threads,
        "Threads the CPU engines use: set_num_threads's value, else TS_NUM_THREADS, else one per CPU this "
        "process may run on.");
  m.def("set_num_threads", &ts::set_num_threads, py::arg("n"),
        "Threads the CPU engines (and OpenBLAS, up to the count it loaded with) use from the next op on; n >= 1. "
        "Results are the same bytes for any count, except a product large enough for OpenBLAS's threads, whose "
        "float sums group differently on one thread than on several.");
}

}  // namespace ts::python
