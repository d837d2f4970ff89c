// Reverse-mode automatic differentiation: what the generated bindings record on the forward pass.
//
// Every op's binding goes through `recorded`: when grad mode is on and a tensor argument requires grad, the
// result gets a node that knows how to send its gradient back to those arguments. A node of an op with
// derivative formulas (the spec's `derivatives`) calls the generated Python function of its formulas
// (tensorsmith._derivatives) with the call's arguments; the engine (runtime/src/python/autograd.cpp) walks
// the nodes backward from the outputs. Only the bindings include this header; kernels never see it.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>

#include "tensorsmith/tensor.h"
#include "tensorsmith/tensor_caster.h"

namespace ts::autograd {

// What an op's spec says about its derivatives.
enum class Kind {
  Formulas,           // a formula per differentiable tensor argument
  NotDifferentiable,  // `derivatives: none`: results never require grad (comparisons, argmax, integer results)
  NotImplemented,     // no `derivatives` yet: a result requires grad, and backward through it raises
};

// An op's autograd facts, generated from its spec (generated/bindings.cpp).
struct OpInfo {
  const char* name;       // the op, and the function in tensorsmith._derivatives
  const char* spec_path;  // for the error of an op without derivatives
  Kind kind;
  std::vector<std::string> arguments;  // the call's argument names, in order
  std::vector<int> differentiable;  // argument positions gradients flow to (a tensor or a list of tensors)
  std::vector<int> saved;           // argument positions the formulas read (kept for backward)
  int out = -1;                     // position of out=, which cannot take part in autograd
  bool saves_result = false;        // a formula reads `result`
};

// Grad mode (ts.no_grad(), ts.enable_grad()) is per thread, on by default.
bool grad_enabled();
void set_grad_enabled(bool enabled);

// Whether recording could be needed at all: grad mode is on and some tensor that requires grad is alive.
// The no-autograd path of every op costs this one check.
bool might_record();

// The recorders behind `recorded`: `call` holds every argument of the call, in order.
bool requires_grad(pybind11::handle arg);  // a Tensor that requires grad, or a sequence holding one
void refuse_out(const OpInfo& info, const pybind11::tuple& call);
Tensor record(const OpInfo& info, const pybind11::tuple& call, Tensor result);
pybind11::object record(const OpInfo& info, const pybind11::tuple& call, pybind11::object result);
const OpInfo& op_info(const std::string& name);  // by op name (hand-written methods record as ops)
void register_op(const OpInfo& info);

// `forward(args...)`, its result recorded for autograd when it needs to be.
template <typename F, typename... A>
auto recorded(const OpInfo& info, const F& forward, A&&... args) -> decltype(forward(args...)) {
  if (!might_record() || info.kind == Kind::NotDifferentiable) return forward(args...);
  const pybind11::tuple call = pybind11::make_tuple(args...);
  bool needed = false;
  for (pybind11::handle arg : call) needed = needed || requires_grad(arg);
  if (!needed) return forward(args...);
  refuse_out(info, call);
  using Result = decltype(forward(args...));
  if constexpr (std::is_same_v<Result, Tensor>) {
    return record(info, call, forward(args...));
  } else {  // pybind11::object, list or tuple
    return pybind11::reinterpret_borrow<Result>(record(info, call, pybind11::object(forward(args...))));
  }
}

// A core function (a composite op's implementation) as a callable with its own parameters, recorded.
template <typename R, typename... P>
auto recorded_function(const OpInfo& info, R (*function)(P...)) {
  return [&info, function](P... args) -> R { return recorded(info, function, args...); };
}

}  // namespace ts::autograd
