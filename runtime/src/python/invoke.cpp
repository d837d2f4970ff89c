// Private entry points for the acceptance gate (validators/runner.py): call any
// registered op by name, and control the fill of new allocations. The gate
// builds a module per candidate kernel with no generated bindings, so it
// cannot call ops through their public functions.
#include <optional>
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"
#include "tensorsmith/testing.h"

namespace ts::python {

namespace {

py::object kwarg(const py::kwargs& kwargs, const char* name, py::object fallback) {
  return kwargs.contains(name) ? py::reinterpret_borrow<py::object>(kwargs[name]) : fallback;
}

Tensor invoke(const std::string& name, const py::args& args, const py::kwargs& kwargs) {
  const OpDef& op = Registry::global().get(name);
  TS_CHECK(static_cast<int>(args.size()) == op.arity, TypeError,
           name << " takes " << op.arity << " tensor arguments, got " << args.size());
  std::vector<py::handle> handles(args.begin(), args.end());
  std::vector<std::string> labels;
  for (size_t i = 0; i < handles.size(); ++i) labels.push_back("x" + std::to_string(i + 1));
  std::vector<const char*> names;
  for (const std::string& label : labels) names.push_back(label.c_str());
  const std::vector<Tensor> operands = pointwise_operands(op, handles, names);
  switch (op.family) {
    case Family::Pointwise:
      return pointwise(op, operands);
    case Family::Reduction:
      return reduce(op, operands[0], axes_arg(kwarg(kwargs, "axis", py::none())),
                    kwarg(kwargs, "keepdims", py::bool_(false)).cast<bool>());
    case Family::IndexReduction:
      return index_reduce(op, operands[0], axis_arg(kwarg(kwargs, "axis", py::none())),
                          kwarg(kwargs, "keepdims", py::bool_(false)).cast<bool>());
    case Family::Normalization:
      return normalize(op, operands[0], kwarg(kwargs, "axis", py::int_(-1)).cast<int64_t>());
    case Family::Contraction:
      return contract(op, operands[0], operands[1]);
  }
  throw ValueError("unknown op family");  // unreachable: the switch covers every family
}

}  // namespace

void bind_gate_hooks(py::module_& m) {
  m.def("_invoke", &invoke, py::arg("name"), "Call a registered op by name (for the acceptance gate).");
  m.def("_set_allocation_fill", &testing::set_allocation_fill, py::arg("byte"),
        "Fill new allocations with this byte, or None to leave them uninitialised (for the acceptance gate).");
}

}  // namespace ts::python
