// The reverse-mode engine: nodes recorded on the forward pass (tensorsmith/autograd.h), the backward walk,
// gradient accumulation into leaves, and the Tensor attributes autograd adds (requires_grad, grad, grad_fn,
// backward, detach). A node of an op with formulas calls tensorsmith.autograd._apply_formulas, which runs the
// generated Python function of the op's formulas (tensorsmith._derivatives) on tensorsmith ops.
#include "tensorsmith/autograd.h"

#include <pybind11/stl.h>

#include <atomic>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "bindings.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace py = pybind11;

namespace ts::autograd {
struct Node;
}

namespace ts {

// A tracked tensor's record; Tensor holds it through a shared_ptr that copies of the Tensor value share.
struct AutogradMeta {
  explicit AutogradMeta(std::shared_ptr<autograd::Node> fn = nullptr);
  ~AutogradMeta();
  AutogradMeta(const AutogradMeta&) = delete;
  AutogradMeta& operator=(const AutogradMeta&) = delete;
  void set_requires_grad(bool flag);

  bool requires_grad = false;
  Tensor grad;                                   // leaves (and retain_grad()'s tensors): the accumulated gradient
  std::shared_ptr<autograd::Node> grad_fn;       // the node that made the tensor; null for a leaf
  std::weak_ptr<autograd::Node> accumulator;     // a leaf's AccumulateGrad node, while some graph holds it
};

}  // namespace ts

namespace ts::autograd {

namespace {

std::atomic<int64_t> g_live_requiring_grad{0};  // alive AutogradMetas with requires_grad set
thread_local bool t_grad_enabled = true;

// The Python functions backward calls, looked up once and never destroyed (they would outlive the interpreter).
py::handle apply_formulas() {
  static const py::object* function = new py::object(py::module_::import("tensorsmith.autograd").attr("_apply_formulas"));
  return *function;
}

// tensorsmith.autograd._ScatteredGradient(key, value): a formula's gradient that is zero but at `key` of its
// input, where it is `value` (a basic index's, a view picking each element at most once). The engine adds it
// into the input's buffer at the key rather than summing zeros of the input's size (q, k and v of one
// projection).
py::handle scattered_gradient_type() {
  static const py::object* type = new py::object(py::module_::import("tensorsmith.autograd").attr("_ScatteredGradient"));
  return *type;
}

py::handle fit() {
  static const py::object* function = new py::object(py::module_::import("tensorsmith.autograd").attr("_fit"));
  return *function;
}

py::handle add_op() {
  static const py::object* function = new py::object(py::module_::import("tensorsmith._C").attr("add"));
  return *function;
}

bool is_tensor(py::handle h) { return py::isinstance<Tensor>(h); }

bool is_sequence(py::handle h) { return py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h); }

// Real floating and complex: a complex input's gradient is dL/dRe + i dL/dIm (PyTorch's convention).
bool differentiable_dtype(DType dtype) { return is_floating(dtype) || is_complex(dtype); }

Tensor detached(Tensor t) {
  t.set_autograd(nullptr);
  return t;
}

class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(t_grad_enabled) { t_grad_enabled = enabled; }
  ~GradModeGuard() { t_grad_enabled = previous_; }

 private:
  bool previous_;
};

}  // namespace

// One slot's gradient: `value` itself, or `value` at `key` of the slot's input (zeros elsewhere).
struct Gradient {
  Tensor value;
  py::object key;  // null: dense
  bool defined() const { return value.defined(); }
};

// Where one input's gradient goes: the argument (and element of a list argument), and what it must look like.
struct Slot {
  int argument;
  int element;  // -1: the argument is a tensor itself
  Shape shape;
  DType dtype;
  Device device;
};

struct Node : std::enable_shared_from_this<Node> {
  virtual ~Node() = default;
  virtual std::string name() const = 0;
  // The gradient of each slot's input (undefined where none flows), given the gradient of the node's result.
  virtual std::vector<Gradient> apply(const Tensor& grad, bool create_graph) = 0;
  virtual void release() {}  // frees what backward needed; a second backward then raises

  std::vector<Slot> slots;
  std::vector<std::shared_ptr<Node>> next;               // per slot; null where no gradient flows
  std::vector<std::weak_ptr<AutogradMeta>> retained;     // results that keep their .grad (retain_grad())
};

namespace {

// A leaf's gradient sink: backward adds what reaches it into the leaf's .grad.
struct AccumulateGrad final : Node {
  explicit AccumulateGrad(std::shared_ptr<AutogradMeta> leaf) : leaf(std::move(leaf)) {}
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Gradient> apply(const Tensor&, bool) override { return {}; }
  std::shared_ptr<AutogradMeta> leaf;
};

std::string backward_name(const char* op) {
  std::string name;
  bool upper = true;
  for (const char* c = op; *c; ++c) {
    if (*c == '_') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(*c))) : *c;
    upper = false;
  }
  return name + "Backward";
}

// An op whose spec has no derivatives yet: its result requires grad, so the gap surfaces in backward, named.
struct NotImplementedNode final : Node {
  explicit NotImplementedNode(const OpInfo& info) : info(info) {}
  std::string name() const override { return backward_name(info.name); }
  std::vector<Gradient> apply(const Tensor&, bool) override {
    TS_CHECK(false, NotImplementedError,
             "the derivative of " << info.name << " is not implemented: " << info.spec_path
                                  << " has no 'derivatives' (differentiate around it, or call it under ts.no_grad())");
    return {};
  }
  const OpInfo& info;
};

struct SavedVersion {
  std::shared_ptr<Storage> storage;
  uint64_t version;
  std::string what;
};

// t summed over the axes broadcasting stretched `shape` to t's shape (a bias's gradient, every linear layer's),
// as _fit would, without its Python calls; nullopt for any other pair of shapes.
std::optional<Tensor> summed_to(const Tensor& t, const Shape& shape) {
  const int64_t lead = t.ndim() - static_cast<int64_t>(shape.size());
  if (lead < 0) return std::nullopt;
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < lead; ++d) axes.push_back(d);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == t.shape()[lead + d]) continue;
    if (shape[d] != 1) return std::nullopt;
    axes.push_back(lead + static_cast<int64_t>(d));
  }
  static const OpDef& sum = Registry::global().get("sum");
  const Tensor summed = python::reduce(sum, t, axes, true, py::none());
  if (summed.dtype() != t.dtype()) return std::nullopt;
  return summed.reshape(shape);
}

// A formula's value as the gradient of a slot's input: as it is where it already has the input's shape, dtype
// and device (nearly always, and checked here without a Python call per slot), summed here where broadcasting
// only added or stretched axes (outside create_graph); any other value goes through tensorsmith.autograd._fit
// (broadcasting summed away, a cast, a move, a Python number made a tensor), whose ops are recorded under
// create_graph as every formula's are.
Tensor fitted(py::handle value, const Slot& slot) {
  if (is_tensor(value)) {
    const Tensor& t = value.cast<const Tensor&>();
    if (t.dtype() == slot.dtype && t.device() == slot.device) {
      if (t.shape() == slot.shape) return t;
      if (!t_grad_enabled) {
        if (std::optional<Tensor> summed = summed_to(t, slot.shape)) return *summed;
      }
    }
  }
  py::tuple shape(slot.shape.size());
  for (size_t d = 0; d < slot.shape.size(); ++d) shape[d] = slot.shape[d];
  return fit()(value, shape, slot.dtype, slot.device).cast<Tensor>();
}

// An op with formulas: keeps the arguments they read and runs them in Python.
struct FormulaNode final : Node {
  explicit FormulaNode(const OpInfo& info) : info(info) {}
  ~FormulaNode() override {
    py::gil_scoped_acquire gil;  // the last reference may go on a thread without it
    arguments = py::tuple();
  }
  std::string name() const override { return backward_name(info.name); }

  std::vector<Gradient> apply(const Tensor& grad, bool create_graph) override {
    TS_CHECK(!released, RuntimeError,
             "trying to backward through " << name()
                                           << " a second time, after its saved tensors were freed; pass "
                                              "retain_graph=True to the first backward to keep them");
    for (const SavedVersion& saved : versions) {
      TS_CHECK(saved.storage->version() == saved.version, RuntimeError,
               "one of the tensors " << name() << " needs for its gradient has been modified by an in-place operation: "
                                     << saved.what << " of " << info.name << " was at version " << saved.version
                                     << ", is now at version " << saved.storage->version());
    }
    py::object result_object = py::none();
    if (info.saves_result) {
      Tensor r = result;
      if (create_graph) r.set_autograd(std::make_shared<AutogradMeta>(shared_from_this()));  // for double backward
      result_object = py::cast(std::move(r));
    }
    py::list described;  // (argument, element, whether a gradient flows) per slot
    for (size_t i = 0; i < slots.size(); ++i) described.append(py::make_tuple(slots[i].argument, slots[i].element, next[i] != nullptr));
    const py::object grads = apply_formulas()(
        info.name, py::cast(grad), result_object, arguments, py::cast(info.differentiable), described, output);
    std::vector<Gradient> out(slots.size());
    const py::list list = grads;
    TS_CHECK(list.size() == slots.size(), RuntimeError, name() << ": the formulas gave " << list.size() << " gradients for "
                                                               << slots.size() << " inputs");
    for (size_t i = 0; i < slots.size(); ++i) {
      if (list[i].is_none()) continue;
      if (py::isinstance(list[i], scattered_gradient_type())) {
        TS_CHECK(!create_graph, RuntimeError, name() << ": a scattered gradient cannot be recorded for double backward");
        out[i] = {list[i].attr("value").cast<Tensor>(), list[i].attr("key")};
      } else {
        out[i] = {fitted(list[i], slots[i]), py::object()};
      }
    }
    return out;
  }

  void release() override {
    released = true;
    arguments = py::tuple();
    result = Tensor();
  }

  const OpInfo& info;
  int output = -1;      // of an op with several results: which one this node's gradient is of
  py::tuple arguments;  // the call's arguments, tensors no formula reads left out (None)
  Tensor result;        // detached: a result holding its own node would never be freed
  std::vector<SavedVersion> versions;
  bool released = false;
};

// The node a tensor's gradient goes to: its grad_fn, or its leaf's AccumulateGrad; null when it needs none.
std::shared_ptr<Node> gradient_edge(const Tensor& t) {
  const std::shared_ptr<AutogradMeta>& meta = t.autograd();
  if (!meta || !meta->requires_grad) return nullptr;
  if (meta->grad_fn) return meta->grad_fn;
  std::shared_ptr<Node> accumulator = meta->accumulator.lock();
  if (!accumulator) {
    accumulator = std::make_shared<AccumulateGrad>(meta);
    meta->accumulator = accumulator;
  }
  return accumulator;
}

void add_slot(Node& node, int argument, int element, py::handle value) {
  if (is_tensor(value)) {
    const Tensor& t = value.cast<const Tensor&>();
    node.slots.push_back({argument, element, t.shape(), t.dtype(), t.device()});
    node.next.push_back(gradient_edge(t));
  } else {  // a Python scalar or a foreign array: no gradient flows to it
    node.slots.push_back({argument, element, Shape{}, DType::Float64, Device{}});
    node.next.push_back(nullptr);
  }
}

void add_slots(Node& node, const OpInfo& info, const py::tuple& call) {
  for (int position : info.differentiable) {
    py::handle value = call[static_cast<size_t>(position)];
    if (is_sequence(value)) {
      int element = 0;
      for (py::handle item : value) add_slot(node, position, element++, item);
    } else {
      add_slot(node, position, -1, value);
    }
  }
}

void save_version(std::vector<SavedVersion>& versions, py::handle value, const std::string& what) {
  if (is_tensor(value)) {
    const Tensor& t = value.cast<const Tensor&>();
    versions.push_back({t.storage(), t.storage()->version(), what});
  } else if (is_sequence(value)) {
    for (py::handle item : value) save_version(versions, item, what);
  }
}

// `output`: the result's index among an op's several results (-1: its only result).
std::shared_ptr<Node> make_node(const OpInfo& info, const py::tuple& call, const Tensor& result, int output = -1) {
  if (info.kind == Kind::NotImplemented) {
    auto node = std::make_shared<NotImplementedNode>(info);
    add_slots(*node, info, call);
    return node;
  }
  auto node = std::make_shared<FormulaNode>(info);
  node->output = output;
  add_slots(*node, info, call);
  py::list arguments;
  for (size_t i = 0; i < call.size(); ++i) {
    const bool saved = std::find(info.saved.begin(), info.saved.end(), static_cast<int>(i)) != info.saved.end();
    const bool dropped = !saved && std::find(info.differentiable.begin(), info.differentiable.end(), static_cast<int>(i)) !=
                                       info.differentiable.end();
    arguments.append(dropped ? py::none() : py::reinterpret_borrow<py::object>(call[i]));
    if (saved) save_version(node->versions, call[i], "argument " + (i < info.arguments.size() ? info.arguments[i] : std::to_string(i)));
  }
  node->arguments = py::tuple(arguments);
  if (info.saves_result) {
    node->result = detached(result);
    node->versions.push_back({result.storage(), result.storage()->version(), "its result"});
  }
  return node;
}

// `result` as the output of `node`, under a record of its own (a result may be a copy of an input's Tensor).
void attach(Tensor& result, std::shared_ptr<Node> node) {
  result.set_autograd(std::make_shared<AutogradMeta>(std::move(node)));
}

bool same_object_as_argument(py::handle result, const py::tuple& call) {
  for (py::handle arg : call) {
    if (arg.ptr() == result.ptr()) return true;
  }
  return false;
}

std::unordered_map<std::string, const OpInfo*>& op_infos() {
  static auto* infos = new std::unordered_map<std::string, const OpInfo*>();
  return *infos;
}

}  // namespace

bool grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }
bool might_record() { return t_grad_enabled && g_live_requiring_grad.load(std::memory_order_relaxed) > 0; }

bool requires_grad(py::handle arg) {
  if (is_tensor(arg)) {
    const std::shared_ptr<AutogradMeta>& meta = arg.cast<const Tensor&>().autograd();
    return meta && meta->requires_grad;
  }
  if (is_sequence(arg)) {
    for (py::handle item : arg) {
      if (requires_grad(item)) return true;
    }
  }
  return false;
}

void refuse_out(const OpInfo& info, const py::tuple& call) {
  if (info.out < 0 || call[static_cast<size_t>(info.out)].is_none()) return;
  TS_CHECK(false, RuntimeError,
           info.name << ": out= (and in-place operators such as +=) cannot take part in autograd: an input requires "
                        "grad. Write the result to a new tensor (x = x + y), or update under ts.no_grad()");
}

Tensor record(const OpInfo& info, const py::tuple& call, Tensor result) {
  if (info.kind == Kind::NotDifferentiable || !differentiable_dtype(result.dtype())) return result;
  attach(result, make_node(info, call, result));
  return result;
}

py::object record(const OpInfo& info, const py::tuple& call, py::object result) {
  if (info.kind == Kind::NotDifferentiable) return result;
  if (is_tensor(result)) {
    Tensor value = result.cast<Tensor>();
    if (!differentiable_dtype(value.dtype())) return result;
    attach(value, make_node(info, call, value));
    if (same_object_as_argument(result, call)) return py::cast(std::move(value));  // a new object, the input untouched
    result.cast<Tensor&>() = std::move(value);
    return result;
  }
  if (is_sequence(result)) {  // several results: a node each, whose formulas know which result it is
    int output = 0;
    for (py::handle item : result) {
      const int index = output++;
      if (!is_tensor(item) || same_object_as_argument(item, call)) continue;
      Tensor& value = item.cast<Tensor&>();
      if (differentiable_dtype(value.dtype())) attach(value, make_node(info, call, value, index));
    }
  }
  return result;
}

const OpInfo& op_info(const std::string& name) {
  auto it = op_infos().find(name);
  TS_CHECK(it != op_infos().end(), RuntimeError, "autograd: no op named " << name << " is registered");
  return *it->second;
}

void register_op(const OpInfo& info) { op_infos()[info.name] = &info; }

// ---- the backward walk --------------------------------------------------------------------------------

namespace {

Tensor add_gradients(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  return add_op()(a, b).cast<Tensor>();
}

// The gradient a node has gathered so far. `owned`: the engine made the tensor (a sum, a scatter) and nothing
// else holds it, so a scattered gradient may be added into it in place; any other (a formula's value, which
// may be the very gradient another node holds) is copied before such a write.
struct Buffer {
  Tensor gradient;
  bool owned = false;

  void add(const Tensor& dense) {
    owned = gradient.defined();  // a sum is a new tensor; the first value is the formula's own
    gradient = add_gradients(gradient, dense);
  }
};

void add_into(Buffer& buffer, const Gradient& incoming, const Slot& slot) {
  if (!incoming.key) {
    buffer.add(incoming.value);
    return;
  }
  Tensor value = incoming.value;
  if (value.dtype() != slot.dtype || value.device() != slot.device) {  // the slot's dtype and device, its own shape
    value = fitted(py::cast(value), Slot{slot.argument, slot.element, value.shape(), slot.dtype, slot.device});
  }
  const bool fresh = !buffer.gradient.defined();
  if (fresh) {
    buffer.gradient = python::zero_filled(slot.shape, slot.dtype, slot.device);
  } else if (!buffer.owned) {
    buffer.gradient = buffer.gradient.clone();
  }
  buffer.owned = true;
  Tensor target = python::get_item(buffer.gradient, incoming.key);
  TS_CHECK(target.shape() == value.shape(), RuntimeError,
           "a scattered gradient of shape " << shape_str(value.shape()) << " for a part of shape " << shape_str(target.shape()));
  target.copy_from(fresh ? value : add_gradients(target, value));
}

void accumulate_into(AutogradMeta& meta, const Tensor& grad, bool create_graph) {
  Tensor incoming = create_graph ? grad : detached(grad);
  // A broadcast view (sum's gradient) is read-only; a leaf's .grad is the user's to update in place.
  if (!incoming.writeable()) incoming = detached(incoming.clone());
  meta.grad = meta.grad.defined() ? add_gradients(meta.grad, incoming) : incoming;
  if (!create_graph) meta.grad = detached(meta.grad);
}

// Every node reachable from the roots, with how many edges from reachable nodes lead into it.
std::unordered_map<Node*, int> dependencies(const std::vector<std::shared_ptr<Node>>& roots) {
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack;
  for (const auto& root : roots) {
    if (deps.emplace(root.get(), 0).second) stack.push_back(root.get());
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next) {
      if (!next) continue;
      auto [it, fresh] = deps.emplace(next.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(next.get());
    }
  }
  return deps;
}

// The nodes that lead to a target (targets included): only these run when gradients are asked of some inputs.
std::unordered_set<Node*> leading_to(const std::unordered_map<Node*, int>& reachable, const std::unordered_set<Node*>& targets) {
  std::unordered_map<Node*, std::vector<Node*>> parents;
  for (const auto& [node, _] : reachable) {
    for (const auto& next : node->next) {
      if (next) parents[next.get()].push_back(node);
    }
  }
  std::unordered_set<Node*> needed(targets.begin(), targets.end());
  std::vector<Node*> stack(targets.begin(), targets.end());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (Node* parent : parents[node]) {
      if (needed.insert(parent).second) stack.push_back(parent);
    }
  }
  return needed;
}

}  // namespace

// Gradients of `roots` (weighted by `root_grads`) with respect to every leaf (accumulate: into .grad) or to
// `inputs` (returned in order).
std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
                                 const std::vector<Tensor>& inputs, bool keep_graph, bool create_graph, bool accumulate,
                                 bool allow_unused) {
  GradModeGuard mode(create_graph);
  std::vector<std::shared_ptr<Node>> root_nodes;
  std::unordered_map<Node*, Buffer> buffers;
  for (size_t i = 0; i < roots.size(); ++i) {
    std::shared_ptr<Node> node = gradient_edge(roots[i]);
    TS_CHECK(node != nullptr, RuntimeError,
             "element " << i << " of the tensors does not require grad and has no grad_fn: nothing to differentiate");
    TS_CHECK(root_grads[i].shape() == roots[i].shape(), ValueError,
             "the gradient of element " << i << " has shape " << shape_str(root_grads[i].shape())
                                        << ", the tensor has shape " << shape_str(roots[i].shape()));
    buffers[node.get()].add(root_grads[i]);
    root_nodes.push_back(std::move(node));
  }
  std::vector<std::shared_ptr<Node>> targets;
  std::unordered_set<Node*> target_set;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::shared_ptr<Node> node = gradient_edge(inputs[i]);
    TS_CHECK(node != nullptr, RuntimeError, "input " << i << " does not require grad: no gradient can be taken for it");
    target_set.insert(node.get());
    targets.push_back(std::move(node));
  }
  std::unordered_map<Node*, int> deps = dependencies(root_nodes);
  const std::unordered_set<Node*> needed = accumulate ? std::unordered_set<Node*>() : leading_to(deps, target_set);
  auto is_needed = [&](Node* node) { return accumulate || needed.count(node) > 0; };

  std::unordered_map<Node*, Tensor> captured;
  std::vector<std::shared_ptr<Node>> ready;
  for (const auto& node : root_nodes) {
    if (deps[node.get()] == 0 && std::find(ready.begin(), ready.end(), node) == ready.end()) ready.push_back(node);
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.back();
    ready.pop_back();
    const Tensor grad = buffers[node.get()].gradient;
    buffers.erase(node.get());
    if (grad.defined()) {
      for (const auto& weak : node->retained) {
        if (auto meta = weak.lock()) accumulate_into(*meta, grad, create_graph);
      }
      if (target_set.count(node.get())) captured[node.get()] = grad;
      auto* leaf = dynamic_cast<AccumulateGrad*>(node.get());
      if (leaf != nullptr) {
        if (accumulate) accumulate_into(*leaf->leaf, grad, create_graph);
      } else if (is_needed(node.get())) {
        const std::vector<Gradient> grads = node->apply(grad, create_graph);
        for (size_t i = 0; i < node->next.size() && i < grads.size(); ++i) {
          Node* next = node->next[i].get();
          if (next != nullptr && grads[i].defined() && is_needed(next)) add_into(buffers[next], grads[i], node->slots[i]);
        }
        if (!keep_graph) node->release();
      }
    }
    for (const auto& next : node->next) {
      if (next && --deps[next.get()] == 0) ready.push_back(next);
    }
  }
  std::vector<Tensor> result;
  for (size_t i = 0; i < targets.size(); ++i) {
    auto it = captured.find(targets[i].get());
    TS_CHECK(it != captured.end() || allow_unused, RuntimeError,
             "input " << i << " was not used to compute the outputs (pass allow_unused=True to get None for it)");
    result.push_back(it == captured.end() ? Tensor() : it->second);
  }
  return result;
}

}  // namespace ts::autograd

namespace ts {

AutogradMeta::AutogradMeta(std::shared_ptr<autograd::Node> fn) : grad_fn(std::move(fn)) {
  if (grad_fn) set_requires_grad(true);
}

AutogradMeta::~AutogradMeta() { set_requires_grad(false); }

void AutogradMeta::set_requires_grad(bool flag) {
  if (flag != requires_grad) autograd::g_live_requiring_grad.fetch_add(flag ? 1 : -1, std::memory_order_relaxed);
  requires_grad = flag;
}

}  // namespace ts

// ---- Python ---------------------------------------------------------------------------------------------

namespace ts::python {

namespace {

using autograd::Node;

struct GradFn {
  std::shared_ptr<Node> node;
};

AutogradMeta* meta_of(const Tensor& t) { return t.autograd().get(); }

bool tensor_requires_grad(const Tensor& t) { return meta_of(t) != nullptr && meta_of(t)->requires_grad; }

bool is_leaf(const Tensor& t) { return meta_of(t) == nullptr || meta_of(t)->grad_fn == nullptr; }

void set_requires_grad(Tensor& t, bool flag) {
  TS_CHECK(is_leaf(t), RuntimeError,
           "requires_grad can only be changed on leaf tensors (this one was computed by "
               << meta_of(t)->grad_fn->name() << "); use .detach() for a tensor outside the graph");
  if (flag) {
    TS_CHECK(autograd::differentiable_dtype(t.dtype()), RuntimeError,
             "only floating-point and complex tensors can require gradients, not " << dtype_name(t.dtype()));
  }
  if (meta_of(t) == nullptr) {
    if (!flag) return;
    t.set_autograd(std::make_shared<AutogradMeta>());
  }
  meta_of(t)->set_requires_grad(flag);
}

std::vector<Tensor> tensors(const py::sequence& items, const char* what) {
  std::vector<Tensor> out;
  for (py::handle item : items) {
    TS_CHECK(py::isinstance<Tensor>(item), TypeError, what << " must be tensorsmith Tensors, not " << py::str(py::type::of(item)).cast<std::string>());
    out.push_back(item.cast<Tensor>());
  }
  return out;
}

}  // namespace

void bind_autograd(py::module_& m, py::class_<Tensor>& cls) {
  py::class_<GradFn> grad_fn(m, "GradFn", py::is_final(), "The node of the autograd graph that made a tensor.");
  forbid_construction(grad_fn, "tensors computed from tensors that require grad carry one in .grad_fn");
  grad_fn.def("name", [](const GradFn& f) { return f.node->name(); })
      .def_property_readonly("next_functions",
                             [](const GradFn& f) {
                               py::list out;
                               for (const auto& next : f.node->next) {
                                 out.append(next ? py::cast(GradFn{next}) : py::none());
                               }
                               return py::tuple(out);
                             })
      .def("__repr__", [](const GradFn& f) { return "<" + f.node->name() + ">"; });

  cls.def_property(
         "requires_grad", [](const Tensor& t) { return tensor_requires_grad(t); },
         [](Tensor& t, bool flag) { set_requires_grad(t, flag); },
         "Whether operations on this tensor are recorded for autograd (settable on leaves).")
      .def(
          "requires_grad_",
          [](py::object self, bool flag) {
            set_requires_grad(self.cast<Tensor&>(), flag);
            return self;
          },
          py::arg("requires_grad") = true, "Sets requires_grad in place; returns the tensor.")
      .def_property(
          "grad",
          [](const Tensor& t) -> py::object {
            if (meta_of(t) == nullptr || !meta_of(t)->grad.defined()) return py::none();
            return py::cast(meta_of(t)->grad);
          },
          [](Tensor& t, py::object value) {
            if (value.is_none()) {
              if (meta_of(t) != nullptr) meta_of(t)->grad = Tensor();
              return;
            }
            const Tensor g = value.cast<Tensor>();
            TS_CHECK(g.shape() == t.shape() && g.dtype() == t.dtype(), ValueError,
                     "grad must have the tensor's shape " << shape_str(t.shape()) << " and dtype " << dtype_name(t.dtype())
                                                          << ", not " << shape_str(g.shape()) << " " << dtype_name(g.dtype()));
            if (meta_of(t) == nullptr) t.set_autograd(std::make_shared<AutogradMeta>());
            meta_of(t)->grad = g;
          },
          "The gradient accumulated by backward (leaves and retain_grad() tensors); None before.")
      .def_property_readonly(
          "grad_fn",
          [](const Tensor& t) -> py::object {
            if (meta_of(t) == nullptr || meta_of(t)->grad_fn == nullptr) return py::none();
            return py::cast(GradFn{meta_of(t)->grad_fn});
          },
          "The autograd node that computed this tensor; None for leaves.")
      .def_property_readonly("is_leaf", &is_leaf, "True unless the tensor was computed from tensors that require grad.")
      .def("detach", [](const Tensor& t) { return autograd::detached(t); },
           "The same data (shared memory) outside the autograd graph.")
      .def(
          "retain_grad",
          [](const Tensor& t) {
            TS_CHECK(tensor_requires_grad(t), RuntimeError, "retain_grad on a tensor that does not require grad");
            if (!is_leaf(t)) meta_of(t)->grad_fn->retained.push_back(t.autograd());
          },
          "Keep this non-leaf tensor's gradient in .grad during backward.")
      .def_property_readonly("_version", [](const Tensor& t) { return t.storage()->version(); },
                             "How many in-place writes the tensor's memory has had.")
      .def(
          "backward",
          [](py::object self, py::object gradient, py::object retain_graph, bool create_graph) {
            py::module_::import("tensorsmith.autograd").attr("backward")(self, gradient, retain_graph, create_graph);
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(), py::arg("create_graph") = false,
          "Accumulates the gradient of this tensor into the .grad of every leaf it was computed from.");

  m.def("_is_grad_enabled", &autograd::grad_enabled);
  m.def("_set_grad_enabled", [](bool enabled) {
    const bool previous = autograd::grad_enabled();
    autograd::set_grad_enabled(enabled);
    return previous;
  });
  m.def(
      "_run_backward",
      [](const py::sequence& roots, const py::sequence& grads, const py::sequence& inputs, bool keep_graph,
         bool create_graph, bool accumulate, bool allow_unused) {
        const std::vector<Tensor> result = autograd::run_backward(tensors(roots, "outputs"), tensors(grads, "grad_outputs"),
                                                                  tensors(inputs, "inputs"), keep_graph, create_graph,
                                                                  accumulate, allow_unused);
        py::list out;
        for (const Tensor& t : result) out.append(t.defined() ? py::cast(t) : py::none());
        return out;
      });
}

}  // namespace ts::python
