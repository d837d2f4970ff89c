#include "tensorsmith/dispatch.h"

#include <algorithm>

#include "tensorsmith/errors.h"

namespace ts {

void* OpDef::kernel(DeviceType device, DType dtype) const {
  void* k = kernels[static_cast<int>(device)][static_cast<int>(dtype)];
  TS_CHECK(k != nullptr, NotImplementedError,
           name << " is not implemented for device " << device_type_name(device) << " and dtype "
                << dtype_name(dtype));
  return k;
}

bool OpDef::has_kernel(DeviceType device, DType dtype) const {
  return kernels[static_cast<int>(device)][static_cast<int>(dtype)] != nullptr;
}

Registry& Registry::global() {
  static Registry registry;
  return registry;
}

OpDef& Registry::define(const std::string& name, Family family, int arity, Promotion promotion, bool has_identity) {
  for (auto& op : ops_) {
    if (op->name != name) continue;
    TS_CHECK(op->family == family && op->arity == arity && op->promotion == promotion &&
                 op->has_identity == has_identity,
             ValueError, "op '" << name << "' is already defined differently");
    return *op;
  }
  ops_.push_back(std::make_unique<OpDef>(OpDef{name, family, arity, promotion, has_identity, {}}));
  return *ops_.back();
}

void Registry::set_kernel(const std::string& name, DeviceType device, DType dtype, void* kernel) {
  get(name).kernels[static_cast<int>(device)][static_cast<int>(dtype)] = kernel;
}

OpDef& Registry::get(const std::string& name) {
  for (auto& op : ops_) {
    if (op->name == name) return *op;
  }
  throw NotImplementedError("op '" + name + "' is not defined");
}

std::vector<const OpDef*> Registry::ops() const {
  std::vector<const OpDef*> out;
  out.reserve(ops_.size());
  for (const auto& op : ops_) out.push_back(op.get());
  std::sort(out.begin(), out.end(), [](const OpDef* a, const OpDef* b) { return a->name < b->name; });
  return out;
}

}  // namespace ts
