// C-level entry points in front of the pybind11 bindings of the pointwise ops, their Tensor methods and
// operators, Tensor.__getitem__, reshape, astype and copy, ts.astype, and every other op's function and method
// when called with keywords (declared in tensorsmith/python.h and bindings.h).
//
// pybind11's dispatcher (overload resolution, keyword matching, a type lookup per argument) is a fixed cost
// that small tensors feel: the common calls (positional tensors and Python scalars, no keywords, nothing
// recording gradients) take this path and run the very function the binding runs. Every other call, and
// one that raises, goes to pybind11's function, so results and errors are the binding's own.
#include <Python.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstddef>
#include <deque>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "tensorsmith/autograd.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

enum class Form {
  AsGiven,    // op(args...): a function, a method (self first) or an operator
  Reflected,  // op(other, self): __radd__ and the other reflected operators
  GetItem,    // self[key]
  Reshape,    // self.reshape(*shape)
  AsType,     // self.astype(dtype) and ts.astype(x, dtype): a copy (copy=True, the default)
  Copy,       // self.copy()
  Keywords,   // an op's function or method called with keywords: its pybind11 record, run directly
};

struct FastEntry {
  const OpDef* op;  // null but for AsGiven and Reflected
  Form form;
  bool method;  // a Tensor method or operator (else a module function)
  py::object fallback;  // pybind11's function (for a method: the function under its instancemethod)
  const py::detail::function_record* record = nullptr;  // Keywords: the fallback's one overload
  std::vector<py::object> names;  // Keywords: each argument's name, interned once
  std::string name;
  std::string doc;
  PyMethodDef def;
};

PyObject* call_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames);

// Entries live as long as the process: PyMethodDef must not move (a deque's elements never do), and the
// functions may be called during interpreter teardown.
std::deque<FastEntry>& entries() {
  static auto* all = new std::deque<FastEntry>();
  return *all;
}

FastEntry& new_entry(const OpDef* op, Form form, bool method, py::object fallback, const char* name) {
  FastEntry& entry = entries().emplace_back();
  entry.op = op;
  entry.form = form;
  entry.method = method;
  entry.fallback = std::move(fallback);
  entry.name = name;
  const py::object doc = entry.fallback.attr("__doc__");
  entry.doc = doc.is_none() ? std::string() : doc.cast<std::string>();
  entry.def = PyMethodDef{entry.name.c_str(), reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&call_entry)),
                          METH_FASTCALL | METH_KEYWORDS, entry.doc.empty() ? nullptr : entry.doc.c_str()};
  return entry;
}

// A Python scalar NEP 50 treats as weak (numpy's scalars are strong: they take pybind11's path).
bool weak_scalar(PyObject* p) {
  return PyFloat_CheckExact(p) || PyLong_CheckExact(p) || PyBool_Check(p) || PyComplex_CheckExact(p);
}

// Every operand a Tensor or a weak scalar, and at least one a Tensor.
bool plain_operands(PyObject* const* args, Py_ssize_t n) {
  bool tensor = false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (exact_tensor(args[i]) != nullptr) {
      tensor = true;
    } else if (!weak_scalar(args[i])) {
      return false;
    }
  }
  return tensor;
}

// A module function's keywords the entry takes: `out` alone (every pointwise function has it) holding a Tensor.
// pointwise_into checks that tensor; one it refuses sends the call to pybind11's path, which raises the same
// error. Any other keyword, out=None included, takes pybind11's path (the tests compare the two paths by it).
bool out_tensor_only(const FastEntry& entry, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return entry.form == Form::AsGiven && !entry.method && PyTuple_GET_SIZE(kwnames) == 1 &&
         PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "out") == 0 && exact_tensor(args[nargs]) != nullptr;
}

bool takes_call(const FastEntry& entry, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (autograd::might_record() || (kwnames != nullptr && !out_tensor_only(entry, args, nargs, kwnames))) return false;
  switch (entry.form) {
    case Form::GetItem: return nargs == 2 && exact_tensor(args[0]) != nullptr;
    case Form::Reshape: return nargs >= 2 && exact_tensor(args[0]) != nullptr;
    case Form::AsType: return nargs == 2 && exact_tensor(args[0]) != nullptr;
    case Form::Copy: return nargs == 1 && exact_tensor(args[0]) != nullptr;
    case Form::Reflected: return nargs == 2 && plain_operands(args, nargs);
    case Form::AsGiven: return nargs == entry.op->arity && plain_operands(args, nargs);
  }
  return false;
}

// What the binding computes for the call (its names label arguments only in errors, which the fallback raises).
// `out`: the out= tensor, or None.
py::object compute(const FastEntry& entry, PyObject* const* args, Py_ssize_t nargs, py::handle out) {
  if (entry.form == Form::GetItem) return tensor_object(get_item(*exact_tensor(args[0]), args[1]));
  if (entry.form == Form::Reshape) {
    return tensor_object(exact_tensor(args[0])->reshape(ints_from_arguments(args + 1, nargs - 1, "shape")));
  }
  if (entry.form == Form::AsType) return tensor_object(exact_tensor(args[0])->astype(dtype_arg(args[1])));
  if (entry.form == Form::Copy) return tensor_object(exact_tensor(args[0])->clone());
  const OpDef& op = *entry.op;
  if (entry.form == Form::Reflected) return pointwise_into(op, tensor_operands(op, {args[1], args[0]}, {"x1", "x2"}), out);
  switch (op.arity) {
    case 1: return pointwise_into(op, tensor_operands(op, {args[0]}, {"x"}), out);
    case 2: return pointwise_into(op, tensor_operands(op, {args[0], args[1]}, {"x1", "x2"}), out);
    default: return pointwise_into(op, tensor_operands(op, {args[0], args[1], args[2]}, {"x1", "x2", "x3"}), out);
  }
}

// The result of a call the entry takes; nullopt for any other, and for one that raised: pybind11's path
// raises it again, translated as every binding's errors are (what failed wrote nothing: its result was new).
std::optional<PyObject*> taken(const FastEntry& entry, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (!takes_call(entry, args, nargs, kwnames)) return std::nullopt;
  try {
    return compute(entry, args, nargs, kwnames != nullptr ? py::handle(args[nargs]) : py::none()).release().ptr();
  } catch (...) {
    PyErr_Clear();
    return std::nullopt;
  }
}

// ---- keyword calls ----------------------------------------------------------------------------------
// pybind11's dispatcher looks every argument's name up in a call's keywords by making and interning a Python
// string of the name, on every call: about a third of a small sort's time (`ts.sort(t, axis=1)` took 1017 ns,
// `ts.sort(t)` 710). The entry matches the keywords against the names interned once, then does what the
// dispatcher does for a function of one overload: loads the arguments (positional, then keywords, then
// defaults, with the record's conversion flags) and calls the record's impl, whose errors it translates as
// the dispatcher does. A call it cannot place (too few or too many positional arguments, an unknown keyword
// or one naming an argument given by position, a missing argument, None where the binding refuses it, or
// one the binding cannot convert) goes to pybind11's function, which raises its own error. The record and the
// call are pybind11's detail types (attr.h, cast.h; pybind11 3.x): tests/runtime/test_fast_calls.py calls every
// op's entry and binding alike, so a pybind11 release that changes their meaning fails there.

// The index of `name` in the call's keywords, or -1: by identity first (interned names), then by value.
Py_ssize_t keyword_index(PyObject* kwnames, PyObject* name) {
  const Py_ssize_t count = PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (PyTuple_GET_ITEM(kwnames, i) == name) return i;
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, i), name) == 0) return i;
  }
  return -1;
}

// The call's result, or nullopt where pybind11's function must take it.
std::optional<PyObject*> keyword_call(const FastEntry& entry, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const py::detail::function_record& record = *entry.record;
  const Py_ssize_t first_keyword = std::max<Py_ssize_t>(record.nargs_pos_only, record.is_method ? 1 : 0);
  if (nargs < first_keyword || nargs > record.nargs_pos) return std::nullopt;
  py::detail::function_call call(record, nargs > 0 ? args[0] : nullptr);
  Py_ssize_t keywords_used = 0;
  for (size_t i = 0; i < record.nargs; ++i) {
    const py::detail::argument_record& argument = record.args[i];
    py::handle value;
    if (static_cast<Py_ssize_t>(i) < nargs) {
      value = args[i];
    } else if (const Py_ssize_t k = keyword_index(kwnames, entry.names[i].ptr()); k >= 0) {
      value = args[nargs + k];
      ++keywords_used;
    } else {
      value = argument.value;  // the default; null where there is none
    }
    if (!value || (!argument.none && value.is_none())) return std::nullopt;
    call.args.push_back(value);
    call.args_convert.push_back(argument.convert);
  }
  if (keywords_used != PyTuple_GET_SIZE(kwnames)) return std::nullopt;
  py::handle result;
  try {
    const py::detail::loader_life_support guard{};
    result = record.impl(call);
  } catch (py::error_already_set& error) {
    error.restore();
    return nullptr;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
  if (result.ptr() == PYBIND11_TRY_NEXT_OVERLOAD) return std::nullopt;
  if (!result && !PyErr_Occurred()) {
    PyErr_Format(PyExc_TypeError, "%s: unable to convert the return value to a Python object", entry.name.c_str());
  }
  return result.ptr();
}

PyObject* call_entry_args(const FastEntry& entry, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (entry.form == Form::Keywords) {
    // Without keywords pybind11's dispatcher looks no name up: its own path costs about what this one would.
    if (kwnames != nullptr) {
      if (const std::optional<PyObject*> result = keyword_call(entry, args, nargs, kwnames)) return *result;
    }
  } else if (const std::optional<PyObject*> result = taken(entry, args, nargs, kwnames)) {
    return *result;
  }
  return PyObject_Vectorcall(entry.fallback.ptr(), args, static_cast<size_t>(nargs), kwnames);
}

// The `self` of an entry's C function: the entry, and what pickle needs to find the function again
// (builtin functions pickle as getattr(self, name)).
struct EntryObject {
  PyObject_HEAD
  const FastEntry* entry;
  PyObject* module;  // the module a function is found in by name; null for a method (not picklable, as before)
};

PyObject* entry_reduce(PyObject* self, PyObject*) {
  const auto* object = reinterpret_cast<EntryObject*>(self);
  if (object->module == nullptr) {
    return PyErr_Format(PyExc_TypeError, "cannot pickle the Tensor method %s", object->entry->name.c_str());
  }
  PyObject* importlib = PyImport_ImportModule("importlib");
  if (importlib == nullptr) return nullptr;
  PyObject* import_module = PyObject_GetAttrString(importlib, "import_module");
  Py_DECREF(importlib);
  PyObject* name = import_module == nullptr ? nullptr : PyObject_GetAttrString(object->module, "__name__");
  if (name == nullptr) {
    Py_XDECREF(import_module);
    return nullptr;
  }
  return Py_BuildValue("(N(N))", import_module, name);  // importlib.import_module(name); pickle then takes .<function>
}

// The binding the entry is in front of (the tests call both and compare).
PyObject* entry_binding(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<EntryObject*>(self)->entry->fallback.ptr()); }

PyTypeObject* entry_type() {
  static PyMethodDef methods[] = {{"__reduce__", entry_reduce, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr}};
  static PyGetSetDef getters[] = {{"binding", entry_binding, nullptr, "the function this entry is in front of", nullptr},
                                  {nullptr, nullptr, nullptr, nullptr, nullptr}};
  static PyType_Slot slots[] = {{Py_tp_methods, methods}, {Py_tp_getset, getters}, {0, nullptr}};
  static PyType_Spec spec{"tensorsmith._C._FastEntry", sizeof(EntryObject), 0, Py_TPFLAGS_DEFAULT, slots};
  static PyObject* type = PyType_FromSpec(&spec);  // lives as long as the process, as the entries do
  if (type == nullptr) throw py::error_already_set();
  return reinterpret_cast<PyTypeObject*>(type);
}

PyObject* call_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  return call_entry_args(*reinterpret_cast<EntryObject*>(self)->entry, args, PyVectorcall_NARGS(nargsf), kwnames);
}

// The entry as a builtin function of `module_name`; `module`: the module it is an attribute of (null for a method).
py::object c_function(FastEntry& entry, py::handle module, py::handle module_name) {
  auto* self = PyObject_New(EntryObject, entry_type());
  if (self == nullptr) throw py::error_already_set();
  self->entry = &entry;
  self->module = module ? Py_NewRef(module.ptr()) : nullptr;  // never released: the objects live for the process
  const py::object owner = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
  PyObject* function = PyCFunction_NewEx(&entry.def, owner.ptr(), module_name.ptr());
  if (function == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(function);
}

// pybind11's function under cls.<name>'s instancemethod.
py::object method_function(py::handle cls, const char* name) {
  const py::object descriptor = py::reinterpret_borrow<py::dict>(cls.attr("__dict__"))[name];
  TS_CHECK(PyInstanceMethod_Check(descriptor.ptr()), RuntimeError,
           "Tensor." << name << ": expected pybind11's instancemethod in the class, found " << type_name(descriptor));
  return py::reinterpret_borrow<py::object>(PyInstanceMethod_GET_FUNCTION(descriptor.ptr()));
}

// cls.<entry's name> replaced by an instancemethod over the entry's C function (binding self as pybind11's does).
void set_method(py::handle cls, FastEntry& entry) {
  PyObject* method = PyInstanceMethod_New(c_function(entry, py::handle(), cls.attr("__module__")).ptr());
  if (method == nullptr) throw py::error_already_set();
  py::setattr(cls, entry.name.c_str(), py::reinterpret_steal<py::object>(method));
}

const FastEntry& install_method(py::handle cls, const char* name, const OpDef* op, Form form) {
  FastEntry& entry = new_entry(op, form, /*method=*/true, method_function(cls, name), name);
  set_method(cls, entry);
  return entry;
}

// ---- the Tensor type's operator slots ----------------------------------------------------------------
// Python reaches a binary operator through the type's slot (nb_add, ...), which pybind11's class leaves to
// CPython's generic one: it looks __add__ up and binds it to the tensor on every call before our entry
// runs. The slots below take the entry's common calls themselves and answer every other as the generic
// slot would (SLOT1BINFULL, slot_tp_richcompare and SLOT0 in CPython's Objects/typeobject.c).

// `name` looked up on the type of `self` (never its instance dict) and called with `self, args...`; where the
// type has no such attribute, NotImplemented (or AttributeError with `required`), as CPython's slots do.
PyObject* call_special(PyObject* self, PyObject* name, PyObject* other, bool required = false) {
  PyObject* found = _PyType_Lookup(Py_TYPE(self), name);  // borrowed
  if (found == nullptr) {
    if (required) return PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute '%U'", Py_TYPE(self)->tp_name, name);
    Py_RETURN_NOTIMPLEMENTED;
  }
  PyObject* const args[] = {self, other};
  const size_t count = other == nullptr ? 1 : 2;
  if (PyType_HasFeature(Py_TYPE(found), Py_TPFLAGS_METHOD_DESCRIPTOR)) return PyObject_Vectorcall(found, args, count, nullptr);
  descrgetfunc get = Py_TYPE(found)->tp_descr_get;
  PyObject* bound = get == nullptr ? Py_NewRef(found) : get(found, self, reinterpret_cast<PyObject*>(Py_TYPE(self)));
  if (bound == nullptr) return nullptr;
  PyObject* result = PyObject_Vectorcall(bound, args + 1, count - 1, nullptr);
  Py_DECREF(bound);
  return result;
}

struct BinaryOperator {
  const char* name;
  const char* reflected;
  size_t slot;  // offset of the binaryfunc in PyNumberMethods
};

constexpr BinaryOperator kBinaryOperators[] = {
    {"__add__", "__radd__", offsetof(PyNumberMethods, nb_add)},
    {"__sub__", "__rsub__", offsetof(PyNumberMethods, nb_subtract)},
    {"__mul__", "__rmul__", offsetof(PyNumberMethods, nb_multiply)},
    {"__truediv__", "__rtruediv__", offsetof(PyNumberMethods, nb_true_divide)},
    {"__floordiv__", "__rfloordiv__", offsetof(PyNumberMethods, nb_floor_divide)},
    {"__mod__", "__rmod__", offsetof(PyNumberMethods, nb_remainder)},
    {"__and__", "__rand__", offsetof(PyNumberMethods, nb_and)},
    {"__or__", "__ror__", offsetof(PyNumberMethods, nb_or)},
    {"__xor__", "__rxor__", offsetof(PyNumberMethods, nb_xor)},
    {"__lshift__", "__rlshift__", offsetof(PyNumberMethods, nb_lshift)},
    {"__rshift__", "__rrshift__", offsetof(PyNumberMethods, nb_rshift)},
};
constexpr size_t kBinaryCount = std::size(kBinaryOperators);

struct UnaryOperator {
  const char* name;
  size_t slot;  // offset of the unaryfunc in PyNumberMethods
};

constexpr UnaryOperator kUnaryOperators[] = {
    {"__neg__", offsetof(PyNumberMethods, nb_negative)},
    {"__pos__", offsetof(PyNumberMethods, nb_positive)},
    {"__abs__", offsetof(PyNumberMethods, nb_absolute)},
    {"__invert__", offsetof(PyNumberMethods, nb_invert)},
};
constexpr size_t kUnaryCount = std::size(kUnaryOperators);

// Indexed by Py_LT ... Py_GE.
constexpr const char* kComparisons[] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};

// What a slot needs at call time: the entry it runs (null: no fast entry, the generic answer only) and the
// interned names it looks up otherwise.
struct SlotState {
  const FastEntry* entry = nullptr;
  PyObject* name = nullptr;
  PyObject* reflected = nullptr;
};
SlotState g_binary[kBinaryCount];
SlotState g_unary[kUnaryCount];
SlotState g_comparison[std::size(kComparisons)];

template <typename F>
F& slot_at(PyTypeObject* type, size_t offset) {
  return *reinterpret_cast<F*>(reinterpret_cast<char*>(type->tp_as_number) + offset);
}

// The slot's entry's result where it takes the call (the generic answer raises what it raised).
std::optional<PyObject*> taken(const SlotState& state, PyObject* const* args, Py_ssize_t nargs) {
  return state.entry == nullptr ? std::nullopt : taken(*state.entry, args, nargs, nullptr);
}

// An operator with an object the ops cannot take (None, a string, a type of another library) answers
// NotImplemented rather than the binding's TypeError, as Python's protocol asks: the other object's
// reflected operator gets its turn, `t == None` falls back to identity (False) and `t + None` raises
// Python's own "unsupported operand type(s)".
bool operands_taken(PyObject* a, PyObject* b) {
  return (exact_tensor(a) != nullptr || is_operand(a)) && (exact_tensor(b) != nullptr || is_operand(b));
}

template <size_t I>
PyObject* binary_slot(PyObject* self, PyObject* other) {
  const SlotState& state = g_binary[I];
  PyObject* const args[] = {self, other};
  if (const std::optional<PyObject*> result = taken(state, args, 2)) return *result;
  if (!operands_taken(self, other)) Py_RETURN_NOTIMPLEMENTED;
  // SLOT1BINFULL: self.__op__(other), then other.__rop__(self); a subclass overriding __rop__ first.
  const auto has_this_slot = [](PyObject* o) {
    return Py_TYPE(o)->tp_as_number != nullptr && slot_at<binaryfunc>(Py_TYPE(o), kBinaryOperators[I].slot) == &binary_slot<I>;
  };
  bool do_other = !Py_IS_TYPE(self, Py_TYPE(other)) && has_this_slot(other);
  if (has_this_slot(self)) {
    if (do_other && PyType_IsSubtype(Py_TYPE(other), Py_TYPE(self)) &&
        _PyType_Lookup(Py_TYPE(other), state.reflected) != _PyType_Lookup(Py_TYPE(self), state.reflected)) {
      PyObject* r = call_special(other, state.reflected, self);
      if (r != Py_NotImplemented) return r;
      Py_DECREF(r);
      do_other = false;
    }
    PyObject* r = call_special(self, state.name, other);
    if (r != Py_NotImplemented || Py_IS_TYPE(other, Py_TYPE(self))) return r;
    Py_DECREF(r);
  }
  if (do_other) return call_special(other, state.reflected, self);
  Py_RETURN_NOTIMPLEMENTED;
}

template <size_t I>
PyObject* unary_slot(PyObject* self) {
  PyObject* const args[] = {self};
  if (const std::optional<PyObject*> result = taken(g_unary[I], args, 1)) return *result;
  return call_special(self, g_unary[I].name, nullptr, /*required=*/true);
}

PyObject* comparison_slot(PyObject* self, PyObject* other, int op) {
  const SlotState& state = g_comparison[op];
  PyObject* const args[] = {self, other};
  if (const std::optional<PyObject*> result = taken(state, args, 2)) return *result;
  if (!operands_taken(self, other)) Py_RETURN_NOTIMPLEMENTED;
  return call_special(self, state.name, other);
}

template <size_t... I>
void install_number_slots(PyTypeObject* type, std::index_sequence<I...>) {
  ((g_binary[I].entry != nullptr ? (void)(slot_at<binaryfunc>(type, kBinaryOperators[I].slot) = &binary_slot<I>) : void()), ...);
}

template <size_t... I>
void install_unary_slots(PyTypeObject* type, std::index_sequence<I...>) {
  ((g_unary[I].entry != nullptr ? (void)(slot_at<unaryfunc>(type, kUnaryOperators[I].slot) = &unary_slot<I>) : void()), ...);
}

// The Tensor operator `name`'s entry, if it has one.
const FastEntry* operator_entry(const char* name) {
  for (const FastEntry& entry : entries()) {
    if (entry.method && entry.form == Form::AsGiven && entry.name == name) return &entry;
  }
  return nullptr;
}

PyObject* interned(const char* name) {
  PyObject* s = PyUnicode_InternFromString(name);  // kept for the process, as the slots are
  if (s == nullptr) throw py::error_already_set();
  return s;
}

}  // namespace

void fast_operator_slots(py::handle cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  TS_CHECK(type->tp_as_number != nullptr, RuntimeError, "Tensor: the class has no number slots to fill");
  for (size_t i = 0; i < kBinaryCount; ++i) {
    g_binary[i] = {operator_entry(kBinaryOperators[i].name), interned(kBinaryOperators[i].name), interned(kBinaryOperators[i].reflected)};
  }
  for (size_t i = 0; i < kUnaryCount; ++i) g_unary[i] = {operator_entry(kUnaryOperators[i].name), interned(kUnaryOperators[i].name), nullptr};
  bool comparisons = false;
  for (size_t i = 0; i < std::size(kComparisons); ++i) {
    g_comparison[i] = {operator_entry(kComparisons[i]), interned(kComparisons[i]), nullptr};
    comparisons = comparisons || g_comparison[i].entry != nullptr;
  }
  install_number_slots(type, std::make_index_sequence<kBinaryCount>());
  install_unary_slots(type, std::make_index_sequence<kUnaryCount>());
  if (comparisons) type->tp_richcompare = &comparison_slot;
  PyType_Modified(type);
}

void fast_function(py::module_& m, const char* name, const OpDef& op) {
  FastEntry& entry = new_entry(&op, Form::AsGiven, /*method=*/false, m.attr(name), name);
  m.attr(name) = c_function(entry, m, m.attr("__name__"));
}

void fast_method(py::handle cls, const char* name, const OpDef& op, bool reflected) {
  install_method(cls, name, &op, reflected ? Form::Reflected : Form::AsGiven);
}

// ---- views as properties: t.T, t.mT -------------------------------------------------------------------
// A C getter in front of pybind11's property, whose call goes through its dispatcher (about three times the
// view's own cost). A Tensor with nothing recording gradients gets the view here; every other call, and one
// that raises (mT of a 1-d tensor), goes to the property's getter, so results and errors are its own.

namespace {

struct FastView {
  Tensor (Tensor::*view)() const;
  py::object fallback;  // the property's getter
  std::string name;
  std::string doc;
  PyGetSetDef def;
};

PyObject* view_getter(PyObject* self, void* closure) {
  const auto& entry = *static_cast<const FastView*>(closure);
  if (const Tensor* t = exact_tensor(self); t != nullptr && !autograd::might_record()) {
    try {
      return tensor_object((t->*entry.view)()).release().ptr();
    } catch (...) {
      PyErr_Clear();
    }
  }
  return PyObject_CallOneArg(entry.fallback.ptr(), self);
}

void fast_view(py::handle cls, const char* name, Tensor (Tensor::*view)() const) {
  static auto* all = new std::deque<FastView>();  // as the entries: never moved, alive for the process
  const py::object property = py::reinterpret_borrow<py::dict>(cls.attr("__dict__"))[name];
  FastView& entry = all->emplace_back();
  entry.view = view;
  entry.fallback = property.attr("fget");
  entry.name = name;
  const py::object doc = property.attr("__doc__");
  entry.doc = doc.is_none() ? std::string() : doc.cast<std::string>();
  entry.def = PyGetSetDef{entry.name.c_str(), &view_getter, nullptr, entry.doc.empty() ? nullptr : entry.doc.c_str(), &entry};
  PyObject* descriptor = PyDescr_NewGetSet(reinterpret_cast<PyTypeObject*>(cls.ptr()), &entry.def);
  if (descriptor == nullptr) throw py::error_already_set();
  py::setattr(cls, name, py::reinterpret_steal<py::object>(descriptor));
}

}  // namespace

void fast_reshape(py::handle cls) { install_method(cls, "reshape", nullptr, Form::Reshape); }

void fast_copies(py::module_& m, py::handle cls) {
  install_method(cls, "copy", nullptr, Form::Copy);
  install_method(cls, "astype", nullptr, Form::AsType);
  // ts.astype is Python (tensorsmith/_data_types.py: it checks x's type, then calls the method): its module
  // puts this entry in front of it, found by pickle under the same module and name.
  m.def(
      "_fast_astype",
      [](py::object function) {
        FastEntry& entry = new_entry(nullptr, Form::AsType, /*method=*/false, function, "astype");
        const std::string module_name = py::str(function.attr("__module__"));
        const py::module_ module = py::module_::import(module_name.c_str());
        return c_function(entry, module, module.attr("__name__"));
      },
      py::arg("function"), "ts.astype's C entry, in front of `function` (the Python function it falls back to).");
}

void fast_views(py::handle cls) {
  fast_view(cls, "T", &Tensor::T);
  fast_view(cls, "mT", &Tensor::matrix_transpose);
}

void fast_getitem(py::handle cls) {
  // t.__getitem__(key), called by name, through the entry; t[key] straight from the type's slot, which
  // skips looking __getitem__ up and binding it to t (Python's slot_mp_subscript).
  static const FastEntry& entry = install_method(cls, "__getitem__", nullptr, Form::GetItem);
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  type->tp_as_mapping->mp_subscript = [](PyObject* self, PyObject* key) -> PyObject* {
    PyObject* const args[] = {self, key};
    return call_entry_args(entry, args, 2, nullptr);
  };
  PyType_Modified(type);
}

namespace {

// `function`'s pybind11 record where a keyword entry can run it: one overload, every argument named, no *args
// or **kwargs, not a constructor, and an argument a keyword can name; else null (a fast entry's function too).
const py::detail::function_record* keyword_record(py::handle function) {
  if (!PyCFunction_Check(function.ptr()) || PyCFunction_GET_SELF(function.ptr()) == nullptr) return nullptr;
  const py::detail::function_record* record = py::detail::function_record_ptr_from_PyObject(PyCFunction_GET_SELF(function.ptr()));
  if (record == nullptr || record->next != nullptr || record->has_args || record->has_kwargs || record->is_constructor ||
      record->is_new_style_constructor || record->args.size() != record->nargs) {
    return nullptr;
  }
  for (size_t i = std::max<size_t>(record->nargs_pos_only, record->is_method ? 1 : 0); i < record->nargs; ++i) {
    if (record->args[i].name != nullptr) return record;
  }
  return nullptr;
}

FastEntry& keyword_entry(py::object function, const py::detail::function_record& record, bool method, const char* name) {
  FastEntry& entry = new_entry(nullptr, Form::Keywords, method, std::move(function), name);
  entry.record = &record;
  for (const py::detail::argument_record& argument : record.args) {
    entry.names.push_back(argument.name == nullptr ? py::none() : py::reinterpret_steal<py::object>(interned(argument.name)));
  }
  return entry;
}

}  // namespace

void fast_keywords(py::module_& m, py::handle cls) {
  // Names listed first: the loops below replace attributes of what they walk.
  const py::list functions = py::reinterpret_borrow<py::dict>(m.attr("__dict__")).attr("keys")();
  for (const py::handle key : functions) {
    const std::string name = py::str(key);
    if (name.rfind("__", 0) == 0) continue;  // the module's own attributes
    py::object function = m.attr(key);
    if (const py::detail::function_record* record = keyword_record(function)) {
      m.attr(key) = c_function(keyword_entry(std::move(function), *record, /*method=*/false, name.c_str()), m, m.attr("__name__"));
    }
  }
  const py::list methods = cls.attr("__dict__").attr("keys")();  // a mappingproxy's
  for (const py::handle key : methods) {
    const std::string name = py::str(key);
    if (name.rfind("__", 0) == 0 || !PyInstanceMethod_Check(py::object(cls.attr("__dict__")[key]).ptr())) continue;
    py::object function = method_function(cls, name.c_str());
    if (const py::detail::function_record* record = keyword_record(function)) {
      set_method(cls, keyword_entry(std::move(function), *record, /*method=*/true, name.c_str()));
    }
  }
}

}  // namespace ts::python
