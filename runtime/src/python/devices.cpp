// Python Device objects; a Device compares equal to its string form ("cpu").
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.h"
#include "tensorsmith/errors.h"
#ifdef TS_WITH_CUDA
#include "tensorsmith/cuda/device.h"
#include "tensorsmith/cuda/runtime.h"
#endif

namespace ts::python {

Device device_arg(py::handle obj) {
  if (obj.is_none()) return Device{};
  Device device;
  std::string spelling;  // as the caller wrote it, for the error message
  if (py::isinstance<Device>(obj)) {
    device = obj.cast<Device>();
    spelling = device_str(device);
  } else if (py::isinstance<py::str>(obj)) {
    spelling = obj.cast<std::string>();
    device = parse_device(spelling);
  } else {
    throw ts::TypeError("device must be a string such as 'cpu' or a tensorsmith Device, not " +
                        type_name(obj));
  }
  if (device.type == DeviceType::CPU) return device;
#ifdef TS_WITH_CUDA
  TS_CHECK(cuda::is_available(), ValueError,
           "device '" << spelling << "' is not available: no CUDA device/driver available ("
                      << cuda::unavailable_reason() << ")");
  TS_CHECK(device.index < cuda::device_count(), ValueError,
           "device '" << spelling << "' is not available: there are " << cuda::device_count() << " CUDA device(s)");
  return device;
#else
  throw ts::ValueError("device '" + spelling + "' is not available: tensorsmith was built without CUDA");
#endif
}

Tensor to_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
  out.copy_from(t);
  return out;
}

void bind_devices(py::module_& m) {
  py::class_<Device> cls(m, "Device", py::is_final(), "A device tensors live on; equal to its string form, e.g. 'cpu'.");
  construct_in_new(cls, py::cpp_function([](py::handle, const std::string& s) { return parse_device(s); },
                                         py::name("__new__"), py::arg("cls"), py::pos_only(), py::arg("device")));
  cls.def_property_readonly("type", [](const Device& d) { return device_type_name(d.type); })
      .def_property_readonly("index", [](const Device& d) { return d.index; })
      .def("__repr__", [](const Device& d) { return device_str(d); })
      .def("__reduce__",
           [](py::object self) { return py::make_tuple(py::type::of(self), py::make_tuple(device_str(self.cast<Device>()))); })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__eq__", [](const Device& a, const std::string& b) { return device_str(a) == b; })
      .def("__eq__", [](const Device&, py::handle) { return py::handle(Py_NotImplemented); })
      // Hashes like its string so that {"cpu": ...}[t.device] works.
      .def("__hash__", [](const Device& d) { return py::hash(py::str(device_str(d))); });
}

}  // namespace ts::python
