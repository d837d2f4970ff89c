#include "tensorsmith/dispatch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

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

namespace {

// Whether any of the n values at `data` lies outside [low, high]; NaN lies inside. Integers compare in their own
// type against the bounds rounded inward (the loop vectorises; a pass over float64 copies of 4M int8 exponents
// took most of pow's 13 ms), floats as doubles.
template <typename T>
bool any_outside(const char* data, int64_t n, double low, double high) {
  const T* v = reinterpret_cast<const T*>(data);
  bool outside = false;
  if constexpr (std::is_integral_v<T>) {
    // The bounds as whole numbers, compared with T's range as exact doubles (max + 1 is a power of two), so that
    // no conversion below leaves T's range.
    constexpr double kMin = static_cast<double>(std::numeric_limits<T>::min());
    constexpr double kPastMax = 2.0 * static_cast<double>(std::numeric_limits<T>::max() / 2 + 1);
    const double first = std::ceil(low), last = std::floor(high);
    if (first >= kPastMax || last < kMin || first > last) return true;  // n > 0 here: no value of T is inside
    const T lo = first <= kMin ? std::numeric_limits<T>::min() : static_cast<T>(first);
    const T hi = last >= kPastMax ? std::numeric_limits<T>::max() : static_cast<T>(last);
    for (int64_t i = 0; i < n; ++i) outside |= (v[i] < lo) | (v[i] > hi);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(v[i]);
      outside |= (x < low) | (x > high);
    }
  }
  return outside;
}

// The same for a contiguous host tensor of any dtype: bool and the 16-bit floats through a float64 copy.
bool any_outside(const Tensor& values, double low, double high) {
  const char* data = values.data_ptr();
  const int64_t n = values.numel();
  switch (values.dtype()) {
    case DType::Int8: return any_outside<int8_t>(data, n, low, high);
    case DType::Int16: return any_outside<int16_t>(data, n, low, high);
    case DType::Int32: return any_outside<int32_t>(data, n, low, high);
    case DType::Int64: return any_outside<int64_t>(data, n, low, high);
    case DType::UInt8: return any_outside<uint8_t>(data, n, low, high);
    case DType::UInt16: return any_outside<uint16_t>(data, n, low, high);
    case DType::UInt32: return any_outside<uint32_t>(data, n, low, high);
    case DType::UInt64: return any_outside<uint64_t>(data, n, low, high);
    case DType::Float32: return any_outside<float>(data, n, low, high);
    case DType::Float64: return any_outside<double>(data, n, low, high);
    default: return any_outside<double>(values.astype(DType::Float64).data_ptr(), n, low, high);
  }
}

}  // namespace

void OpDef::check_domain(const std::vector<Tensor>& inputs, DType kernel) const {
  for (const DomainRule& rule : domain) {
    const Tensor& input = inputs.at(rule.input);
    if (((rule.dtypes >> static_cast<int>(kernel)) & 1u) == 0 || input.numel() == 0) continue;
    // The values in host memory, contiguous: the input itself where it is both already.
    Tensor host = input;
    if (input.device().type != DeviceType::CPU || !input.is_contiguous()) {
      host = Tensor::empty(input.shape(), input.dtype());
      host.copy_from(input);
    }
    TS_CHECK(!any_outside(host, rule.low, rule.high), ValueError, rule.message);
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

OpDef& OpDef::with_scalars(std::initializer_list<std::string> names) {
  const std::vector<std::string> given(names);
  TS_CHECK(scalars.empty() || scalars == given, ValueError, "op '" << name << "' is already defined with other scalar arguments");
  TS_CHECK(given.size() <= static_cast<size_t>(kMaxUpdateScalars), ValueError,
           "op '" << name << "' has " << given.size() << " scalar arguments; kernels take at most " << kMaxUpdateScalars);
  scalars = given;
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
