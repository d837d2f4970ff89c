#include "tensorsmith/dispatch.h"

#include <algorithm>

#include "tensorsmith/errors.h"
#include "tensorsmith/tensor.h"

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

OpDef& OpDef::require(const DomainRule& rule) {
  const auto same = [&](const DomainRule& r) {
    return r.input == rule.input && r.dtypes == rule.dtypes && r.low == rule.low && r.high == rule.high &&
           r.message == rule.message;
  };
  if (std::none_of(domain.begin(), domain.end(), same)) domain.push_back(rule);
  return *this;
}

void OpDef::check_domain(const std::vector<Tensor>& inputs, DType kernel) const {
  for (const DomainRule& rule : domain) {
    if (((rule.dtypes >> static_cast<int>(kernel)) & 1u) == 0 || inputs.at(rule.input).numel() == 0) continue;
    // The input's own values, as doubles: exact in sign and, for the small bounds domains have, in order.
    Tensor host = Tensor::empty(inputs[rule.input].shape(), inputs[rule.input].dtype());
    host.copy_from(inputs[rule.input]);
    const Tensor values = host.astype(DType::Float64);
    const auto* v = reinterpret_cast<const double*>(values.data_ptr());
    bool outside = false;
    for (int64_t i = 0; i < values.numel(); ++i) outside |= v[i] < rule.low || v[i] > rule.high;  // NaN is inside
    TS_CHECK(!outside, ValueError, rule.message);
  }
}

OpDef& OpDef::with_types(std::initializer_list<TypeRule> rules) {
  std::array<std::optional<TypeRule>, kNumDTypes> table{};
  for (const TypeRule& rule : rules) table[static_cast<int>(rule.common)] = rule;
  const auto same = [](const std::optional<TypeRule>& a, const std::optional<TypeRule>& b) {
    return a.has_value() == b.has_value() && (!a || (a->kernel == b->kernel && a->result == b->result));
  };
  const bool empty = std::none_of(types.begin(), types.end(), [](const auto& r) { return r.has_value(); });
  TS_CHECK(empty || std::equal(types.begin(), types.end(), table.begin(), same), ValueError,
           "op '" << name << "' is already defined with another type table");
  types = table;
  return *this;
}

const TypeRule& OpDef::type_rule(DType common) const {
  const std::optional<TypeRule>& rule = types[static_cast<int>(common)];
  TS_CHECK(rule.has_value(), NotImplementedError, name << " is not implemented for inputs of dtype " << dtype_name(common));
  return *rule;
}

Registry& Registry::global() {
  static Registry registry;
  return registry;
}

OpDef& Registry::define(const std::string& name, Family family, int arity, Promotion promotion, bool has_identity,
                        uint32_t promoted_inputs) {
  for (auto& op : ops_) {
    if (op->name != name) continue;
    TS_CHECK(op->family == family && op->arity == arity && op->promotion == promotion &&
                 op->has_identity == has_identity && op->promoted_inputs == promoted_inputs,
             ValueError, "op '" << name << "' is already defined differently");
    return *op;
  }
  ops_.push_back(std::make_unique<OpDef>(OpDef{name, family, arity, promotion, has_identity, promoted_inputs, {}, {}, {}}));
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
