// The gate's module (_gate): the runtime core, one candidate op, and just enough
// Python to call it on numpy arrays. validators/runner.py loads it in a sandbox.
// It is independent of tensorsmith's own bindings so the gate judges the kernel
// through the engine contract only, and builds in seconds.
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/isa.h"
#include "tensorsmith/testing.h"

namespace py = pybind11;

namespace ts::generated {
void define_ops(ts::Registry& registry);
void register_cpu_kernels(ts::Registry& registry);
void register_cuda_kernels(ts::Registry& registry);
}  // namespace ts::generated

namespace {

// numpy's dtype names are the runtime's (bfloat16 is ml_dtypes' numpy dtype); TypeError for any other.
ts::DType dtype_of(const py::dtype& dt) { return ts::dtype_from_name(py::str(dt.attr("name"))); }

py::dtype numpy_dtype(ts::DType d) {
  if (d == ts::DType::BFloat16) return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
  return py::dtype(ts::dtype_name(d));
}

// A tensor viewing the array's memory (strides and offset kept), holding the array alive.
ts::Tensor view_of(const py::array& array) {
  const ts::DType dtype = dtype_of(array.dtype());
  const auto itemsize = static_cast<py::ssize_t>(ts::itemsize(dtype));
  ts::Shape shape(array.shape(), array.shape() + array.ndim());
  ts::Strides strides;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    TS_CHECK(array.strides()[i] % itemsize == 0, ValueError, "unaligned strides");
    strides.push_back(array.strides()[i] / itemsize);
  }
  char* origin = static_cast<char*>(const_cast<void*>(array.data()));
  auto owner = std::make_shared<py::object>(array);  // released with the GIL held: tensors die inside invoke
  if (array.size() == 0) {
    // No bytes: numpy's pointer for an empty view need not lie inside its buffer, and a storage that spanned
    // the other axes' extents would be copied to a device and back over memory the array does not own.
    auto storage = std::make_shared<ts::Storage>(origin, 0, ts::Device{}, std::static_pointer_cast<void>(owner));
    return ts::Tensor(storage, dtype, shape, strides, 0);
  }
  // Storage starts at the lowest address the view touches, so negative strides work.
  int64_t low = 0;
  int64_t high = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t extent = (shape[i] - 1) * strides[i];
    (extent < 0 ? low : high) += extent;
  }
  auto storage = std::make_shared<ts::Storage>(origin + low * itemsize, static_cast<size_t>((high - low + 1) * itemsize),
                                               ts::Device{}, std::static_pointer_cast<void>(owner));
  return ts::Tensor(storage, dtype, shape, strides, -low);
}

py::array to_numpy(const ts::Tensor& t) {
  const ts::Tensor c = t.contiguous();
  py::array out(numpy_dtype(c.dtype()), std::vector<py::ssize_t>(c.shape().begin(), c.shape().end()));
  std::memcpy(out.mutable_data(), c.data_ptr(), static_cast<size_t>(c.numel()) * c.itemsize());
  return out;
}

// The case's boolean keyword arguments (keepdims, include_initial, descending): false where absent.
using Flags = std::map<std::string, bool>;

bool flag(const Flags& flags, const std::string& name) {
  const auto it = flags.find(name);
  return it != flags.end() && it->second;
}

// The case's float keyword arguments (eps), each or its default where absent.
using Scalars = std::map<std::string, double>;

double scalar(const Scalars& scalars, const std::string& name, double fallback) {
  const auto it = scalars.find(name);
  return it != scalars.end() ? it->second : fallback;
}

// An update op's result: its state tensors after the step, stacked (the reference returns them as a tuple). The
// kernel updates copies of them, made in one new tensor (the allocator's placement and fill apply), so the runner
// still sees every input buffer unchanged; every scalar argument is the case's (the family draws them all).
ts::Tensor updated_state(const ts::OpDef& op, const std::vector<ts::Tensor>& operands, const Scalars& scalars) {
  const ts::Tensor& param = operands.at(0);
  const int64_t states = op.arity - 1;
  ts::Shape shape{states};
  for (const int64_t extent : param.shape()) shape.push_back(extent);
  const ts::Tensor stacked = ts::Tensor::empty(shape, param.dtype(), param.device());
  std::vector<ts::Tensor> arguments;
  for (int64_t k = 0; k < states; ++k) {
    ts::Tensor state(stacked.storage(), param.dtype(), param.shape(), ts::contiguous_strides(param.shape()),
                     k * param.numel());
    state.copy_from(operands.at(k));
    arguments.push_back(state);
  }
  arguments.push_back(operands.at(states));
  std::vector<double> values;
  for (const std::string& name : op.scalars) {
    const auto it = scalars.find(name);
    TS_CHECK(it != scalars.end(), ValueError, op.name << ": the case gives no " << name);
    values.push_back(it->second);
  }
  ts::update(op, arguments, values);
  return stacked;
}

ts::Tensor run(const ts::OpDef& op, const std::vector<ts::Tensor>& operands, const std::optional<std::vector<int64_t>>& axis,
               bool axis_given, const Flags& flags, const Scalars& scalars) {
  // The one axis of the families that take one (the case's first; a reduction's may be an empty tuple).
  const auto single_axis = [&] { return axis ? std::optional<int64_t>(axis->at(0)) : std::nullopt; };
  switch (op.family) {
    case ts::Family::Pointwise:
      return ts::pointwise(op, operands);
    case ts::Family::Reduction:
      return ts::reduce(op, operands.at(0), axis, flag(flags, "keepdims"));
    case ts::Family::IndexReduction:
      return ts::index_reduce(op, operands.at(0), single_axis(), flag(flags, "keepdims"));
    case ts::Family::Normalization:
      return ts::normalize(op, operands.at(0), axis_given && axis ? axis->at(0) : -1);
    case ts::Family::Contraction:
      return ts::contract(op, operands.at(0), operands.at(1));
    case ts::Family::Scan:
      return ts::scan(op, operands.at(0), single_axis(), flag(flags, "include_initial"));
    case ts::Family::Sort:
      return ts::sort(op, operands.at(0), single_axis().value_or(-1), flag(flags, "descending"));
    case ts::Family::Standardization:  // eps's default is the family's (catalog/families/standardization.py)
      return ts::standardize(op, operands, scalar(scalars, "eps", 1e-5));
    case ts::Family::Update:
      return updated_state(op, operands, scalars);
  }
  throw ts::ValueError("unknown family");
}

#ifdef TS_WITH_CUDA
// The bytes of a whole storage, as a 1-D uint8 tensor (for copies that keep every view's layout).
ts::Tensor bytes_of(const std::shared_ptr<ts::Storage>& storage) {
  const auto n = static_cast<int64_t>(storage->nbytes());
  return ts::Tensor(storage, ts::DType::UInt8, {n}, {1}, 0);
}

// The view on `device`: its whole storage copied, so strides, offset and the bytes around it are kept.
ts::Tensor on_device(const ts::Tensor& host, ts::Device device) {
  auto storage = ts::Storage::allocate(host.storage()->nbytes(), device);
  bytes_of(storage).copy_from(bytes_of(host.storage()));
  return ts::Tensor(storage, host.dtype(), host.shape(), host.strides(), host.offset());
}
#endif

py::array invoke(const std::string& name, const std::vector<py::array>& arrays, std::optional<std::vector<int64_t>> axis,
                 bool axis_given, const Flags& flags, const Scalars& scalars, const std::string& device) {
  const ts::OpDef& op = ts::Registry::global().get(name);
  std::vector<ts::Tensor> operands;
  for (const py::array& a : arrays) operands.push_back(view_of(a));
  if (device == "cpu") return to_numpy(run(op, operands, axis, axis_given, flags, scalars));
#ifdef TS_WITH_CUDA
  const ts::Device target = ts::parse_device(device);
  std::vector<ts::Tensor> on_target;
  for (const ts::Tensor& t : operands) on_target.push_back(on_device(t, target));
  const auto copy_inputs_back = [&] {  // the runner checks the inputs the kernel saw were left unchanged
    for (size_t k = 0; k < operands.size(); ++k) bytes_of(operands[k].storage()).copy_from(bytes_of(on_target[k].storage()));
  };
  try {
    const ts::Tensor result = run(op, on_target, axis, axis_given, flags, scalars).contiguous();
    ts::Tensor host = ts::Tensor::empty(result.shape(), result.dtype());
    host.copy_from(result);  // synchronises: kernel errors surface here at the latest
    copy_inputs_back();
    return to_numpy(host);
  } catch (...) {
    copy_inputs_back();
    throw;
  }
#else
  throw ts::ValueError("this gate module was built without CUDA; it cannot run on " + device);
#endif
}

// A copy of a 1-D contiguous array in memory that ends (or starts) at a no-access page: a kernel that reads
// one element past either end of an input faults instead of reading a neighbour's bytes.
py::array guarded_copy(const py::array& source, bool guard_before) {
  TS_CHECK(source.ndim() == 1 && (source.flags() & py::array::c_style), ValueError, "guarded_copy takes a 1-D contiguous array");
  const auto nbytes = static_cast<size_t>(source.nbytes());
  void* block = ts::testing::guarded_allocate(nbytes, guard_before);
  std::memcpy(block, source.data(), nbytes);
  py::capsule owner(block, [](void* p) { ts::testing::guarded_release(p); });
  return py::array(source.dtype(), {source.shape(0)}, {source.itemsize()}, block, owner);
}

ts::testing::Placement placement_named(const std::string& name) {
  if (name == "pooled") return ts::testing::Placement::Pooled;
  if (name == "exact") return ts::testing::Placement::Exact;
  if (name == "guard_after") return ts::testing::Placement::GuardAfter;
  if (name == "guard_before") return ts::testing::Placement::GuardBefore;
  throw ts::ValueError("unknown placement '" + name + "'");
}

}  // namespace

PYBIND11_MODULE(_gate, m) {
  py::register_exception<ts::ValueError>(m, "ValueError", PyExc_ValueError);
  py::register_exception<ts::TypeError>(m, "TypeError", PyExc_TypeError);
  py::register_exception<ts::IndexError>(m, "IndexError", PyExc_IndexError);
  py::register_exception<ts::AxisError>(m, "AxisError", PyExc_ValueError);
  py::register_exception<ts::NotImplementedError>(m, "NotImplementedError", PyExc_NotImplementedError);
  py::register_exception<ts::RuntimeError>(m, "RuntimeError", PyExc_RuntimeError);
  // Read before any kernel runs, as the runtime's module does. The sandbox's environment never carries
  // TS_PREFETCH, so the gate judges this CPU's default; bodies cannot tell (the static check bans `isa`).
  [[maybe_unused]] const volatile bool prefetch_hints = ts::isa::prefetch_hints();
  ts::Registry& registry = ts::Registry::global();
  ts::generated::define_ops(registry);
  ts::generated::register_cpu_kernels(registry);
#ifdef TS_WITH_CUDA
  ts::generated::register_cuda_kernels(registry);
#endif
  m.def("invoke", &invoke, py::arg("name"), py::arg("arrays"), py::arg("axis"), py::arg("axis_given"), py::arg("flags"),
        py::arg("scalars"), py::arg("device") = "cpu");
  m.def("set_allocation_fill", &ts::testing::set_allocation_fill, py::arg("seed"));
  m.def("set_allocation_placement", [](const std::string& name) { ts::testing::set_allocation_placement(placement_named(name)); },
        py::arg("placement"));
  m.def("scrub_stacks", &ts::testing::scrub_stacks, py::arg("seed"));
  m.def("guarded_copy", &guarded_copy, py::arg("array"), py::arg("guard_before"));
}
