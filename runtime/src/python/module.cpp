// Entry point of tensorsmith._C: fills the op registry, then binds the
// hand-written API and the generated ops.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/isa.h"
#include "tensorsmith/python.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  using namespace ts::python;
  m.doc() = "tensorsmith native module: tensors, dtypes and the generated ops";

  register_exceptions(m);

  // TS_PREFETCH is read here, so that a bad value is an error at import rather than in a kernel (volatile: a
  // const function's unused result may be dropped, and the call with it).
  [[maybe_unused]] const volatile bool prefetch_hints = ts::isa::prefetch_hints();
  ts::Registry& registry = ts::Registry::global();
  ts::generated::define_ops(registry);
  ts::generated::register_cpu_kernels(registry);
#ifdef TS_WITH_CUDA
  ts::generated::register_cuda_kernels(registry);
#endif

  bind_dtypes(m);
  bind_devices(m);
  py::class_<ts::Tensor> tensor_class = bind_tensor_class(m);
  bind_indexing(tensor_class);
  bind_scatter_view(m);
  bind_numpy_protocols(tensor_class);
  bind_dlpack(m, tensor_class);
  bind_asarray(m);
  bind_cuda(m);
  bind_autograd(m, tensor_class);
  bind_engine_settings(m);

  ts::generated::bind_ops(m, tensor_class);
  fast_keywords(m, tensor_class);
  fast_operator_slots(tensor_class);
}
