// Maps the runtime's C++ exceptions (tensorsmith/errors.h) to Python ones.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "tensorsmith/cuda/allocator.h"
#include "tensorsmith/errors.h"

namespace ts::python {

void register_exceptions(py::module_& m) {
  // numpy's AxisError is both: code catching either keeps working.
  py::register_exception<ts::AxisError>(m, "AxisError", py::make_tuple(py::handle(PyExc_ValueError), py::handle(PyExc_IndexError)));
  m.attr("AxisError").attr("__module__") = "tensorsmith";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ts::ValueError& e) {
      py::set_error(PyExc_ValueError, e.what());
    } catch (const ts::TypeError& e) {
      py::set_error(PyExc_TypeError, e.what());
    } catch (const ts::IndexError& e) {
      py::set_error(PyExc_IndexError, e.what());
    } catch (const ts::NotImplementedError& e) {
      py::set_error(PyExc_NotImplementedError, e.what());
    } catch (const ts::cuda::OutOfMemoryError& e) {  // before its base, RuntimeError
      py::set_error(PyExc_MemoryError, e.what());
    } catch (const ts::RuntimeError& e) {
      py::set_error(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace ts::python
