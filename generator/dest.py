"""What each generated file contains: Jinja contexts built from the model via api.

Each function returns the context for one template; gen.py renders and writes.
"""

from __future__ import annotations

import ast
import json

from tensorsmith_forge.catalog.derivatives import OUTPUT
from tensorsmith_forge.catalog.dtypes import DTYPES
from tensorsmith_forge.catalog.model import AliasSpec, Catalog, OpSpec, Variant
from tensorsmith_forge.catalog.signature import Argument

from . import api

def body_context(spec: OpSpec, device: str) -> dict[str, object]:
    """What the template proposer's body template for the op's family needs."""
    inputs = [
        {"name": name, "index": i + 1, "ctype": api.input_load_type(spec, i), "compute": api.input_compute_type(spec, i)}
        for i, name in enumerate(a.name for a in spec.signature.tensor_arguments)
    ]
    scalars = [{"name": name, "index": i} for i, name in enumerate(api.own_scalars(spec))]
    return {"inputs": inputs, "scalars": scalars, "device": device, **_fields(spec)}


def _fields(spec: OpSpec) -> dict[str, str]:
    """The family's C++ fields as the spec gives them, absent optional ones as the family defaults them."""
    return {**dict(spec.family.field_defaults), **dict(spec.fields)}


def kernel_context(spec: OpSpec, device: str, body: str, proposer: str, header: str) -> dict[str, object]:
    kernels = []
    for dtype in api.kernel_dtypes(spec):
        types = api.kernel_types(spec, dtype)
        kernels.append({"dtype_enum": api.DTYPE_ENUM[dtype], "scalar": types.scalar, "acc": types.acc, "out": types.out,
                        "compute": types.compute})  # fmt: skip
    names = [a.name for a in spec.signature.tensor_arguments]
    return {
        "header": header,
        "op": spec.name,
        "doc": spec.doc,
        "kernel": api.kernel_struct(spec, device),
        "register_fn": api.register_function(spec, device),
        "device_enum": api.DEVICE_ENUM[device],
        "kernels": kernels,
        "input_names": names,
        # CUDA pointwise functors: parameters as computed in, inputs as stored.
        "cuda_params": ", ".join(f"{api.input_compute_type(spec, i)} {n}" for i, n in enumerate(names)),
        "cuda_inputs": ", ".join(api.input_cpp_type(spec, i) for i in range(len(names))),
        "sort_output": api.sort_output(spec),  # sort kernels: what the op writes
        **_fields(spec),
        "body": body.rstrip("\n"),
        "proposer": proposer,
    }


def registration_context(catalog: Catalog, header: str, devices: tuple[str, ...] | None = None) -> dict[str, object]:
    """The op table: every op's definition and, per device, a function registering its kernels. Only the
    kernels of `devices` (default: all) are registered; the gate builds one op on one device."""
    ops = [
        {
            "name": spec.name,
            "family": spec.family.cpp_enum,
            "arity": spec.arity,
            "promotion": api.PROMOTION_ENUM[spec.promotion],
            "has_identity": "true" if spec.field("identity") else "false",
            "promoted_inputs": f"0x{api.promoted_inputs(spec):x}u",
            "types": [{"common": api.DTYPE_ENUM[c], "kernel": api.DTYPE_ENUM[k], "result": api.DTYPE_ENUM[r]}
                      for c, k, r in api.type_table(spec)],
            "domain": api.domain_rules(spec),
            "scalars": ", ".join(f'"{name}"' for name in api.own_scalars(spec)),
        }
        for spec in catalog.ops
    ]
    registered = api.DEVICES if devices is None else devices
    per_device = [
        {
            "name": device,
            "guard": api.DEVICE_GUARD[device],
            "register_fns": [api.register_function(spec, device) for spec in catalog.ops] if device in registered else [],
        }
        for device in api.DEVICES
    ]
    return {"header": header, "ops": ops, "devices": per_device}


def bindings_context(catalog: Catalog, header: str) -> dict[str, object]:
    aliases: dict[str, list[AliasSpec]] = {}
    for alias in catalog.aliases:
        aliases.setdefault(alias.alias_of, []).append(alias)
    composites = []
    for c in catalog.composites:
        annotations = _py_arguments(c.signature.arguments, method=False)  # none for a lone variadic argument
        composites.append({"name": c.name, "implementation": c.implementation, "doc": cpp_string(c.doc),
                           "annotations": f"{annotations}, " if annotations else "", "autograd": _autograd_info(c)})  # fmt: skip
    return {"header": header, "ops": [_binding(spec, aliases.get(spec.name, [])) for spec in catalog.ops], "composites": composites}


def _binding(spec: OpSpec, aliases: list[AliasSpec]) -> dict[str, object]:
    args = spec.signature.arguments
    parameters = ", ".join(f"{api.binding_cpp_type(spec, a)} {a.name}" for a in args)
    arguments = _py_arguments(args, method=False)
    no_out = ""  # what methods and operators pass for out=, which only the function takes
    if api.takes_out(spec):
        parameters += ", pybind11::object out"
        arguments += ', py::kw_only(), py::arg("out") = pybind11::none()'
        no_out = ", pybind11::none()"
    functions = [{"name": spec.name, "doc": cpp_string(spec.doc)}]
    functions += [{"name": a.name, "doc": cpp_string(a.doc)} for a in aliases]
    method = _method(spec, args, no_out) if Variant.method in spec.variants else None
    operators = []
    tensor_type = api.binding_cpp_type(spec, spec.signature.tensor_arguments[0])
    for dunder in spec.operators:
        if spec.arity == 1:
            operators.append({"name": dunder, "parameters": f"{tensor_type} self", "result": f"{spec.name}(self{no_out})"})
            continue
        if api.is_inplace(dunder) and no_out:  # numpy's x += y: add(x, y, out=x), which returns x
            result = f"{spec.name}(self, other, self)"
        elif api.is_inplace(dunder):  # x @= y: the result stored into x (same shape, a same-kind cast), x returned
            result = f"ts::python::store_into(self, {spec.name}(self, other))"
        else:
            result = f"{spec.name}({'other, self' if api.is_reflected(dunder) else 'self, other'}{no_out})"
        operators.append({"name": dunder, "parameters": f"{tensor_type} self, {tensor_type} other", "result": result})
    return {
        "name": spec.name,
        "fast_calls": _fast_calls(spec, [f["name"] for f in functions], method is not None),
        "parameters": parameters,
        "names": ", ".join(api.binding_argument_names(spec)),
        "autograd": _autograd_info(spec),
        "engine_call": _engine_call(spec),
        "arguments": arguments,
        "functions": functions,
        "method": method,
        "operators": operators,
    }


def _fast_calls(spec: OpSpec, functions: list[str], method: bool) -> list[str]:
    """The C-level entries put in front of the op's pybind11 function, method and operators
    (tensorsmith/python.h), where its family has them. In-place operators keep pybind11's: they write."""
    if not spec.family.fast_calls:
        return []
    calls = [f'ts::python::fast_function(m, "{name}", *op)' for name in functions]
    if method:
        calls.append(f'ts::python::fast_method(tensor_class, "{spec.name}", *op, false)')
    for dunder in spec.operators:
        if not api.is_inplace(dunder):
            reflected = "true" if api.is_reflected(dunder) else "false"
            calls.append(f'ts::python::fast_method(tensor_class, "{dunder}", *op, {reflected})')
    return calls


def _autograd_info(spec: OpSpec | CompositeSpec) -> str:
    """The op's ts::autograd::OpInfo initialiser (tensorsmith/autograd.h)."""
    names = api.binding_argument_names(spec)
    fields = [
        cpp_string(spec.name),
        cpp_string(spec.path),
        api.autograd_kind(spec),
        "{" + ", ".join(map(cpp_string, names)) + "}",
        "{" + ", ".join(map(str, api.differentiable_positions(spec))) + "}",
        "{" + ", ".join(map(str, api.saved_positions(spec))) + "}",
        str(names.index("out") if "out" in names else -1),
        "true" if spec.derivatives is not None and spec.derivatives.uses_result else "false",
    ]
    return "{" + ", ".join(fields) + "}"


def derivatives_context(catalog: Catalog, header: str) -> dict[str, object]:
    """tensorsmith/_derivatives.py: one function per op with formulas, the formulas verbatim in its body."""
    functions = []
    for spec in (*catalog.ops, *catalog.composites):
        if spec.derivatives is None or not spec.derivatives.differentiable:
            continue
        names = api.binding_argument_names(spec)
        wanted = [d for d in spec.derivatives.formulas if d.differentiable]
        formulas, shared = shared_calls([d.formula for d in wanted])
        parameters = [*names, *([OUTPUT] if spec.signature.returns_several else [])]  # which result grad is of
        functions.append({"name": spec.name, "path": spec.path, "parameters": ", ".join(parameters),
                          "shared": [{"name": name, "call": call, "condition": " or ".join(f"wanted[{i}]" for i in readers)}
                                     for name, call, readers in shared],
                          "formulas": [{"input": d.input, "formula": f, "index": i} for i, (d, f) in enumerate(zip(wanted, formulas, strict=True))]})  # fmt: skip
    # `from _C import *` leaves out private ops (_gelu_tanh_grad): those the formulas call are imported by name
    private = sorted({name for spec in (*catalog.ops, *catalog.composites) if spec.derivatives
                      for d in spec.derivatives.formulas for name in d.calls if name.startswith("_")})  # fmt: skip
    return {"header": header, "functions": functions, "private_ops": private}


def shared_calls(formulas: list[str]) -> tuple[list[str], list[tuple[str, str, tuple[int, ...]]]]:
    """An op's formulas with each call that two or more of them make alike (layer_norm's
    `rows_of(x, normalized_shape)`) read from a local instead: (the formulas, rewritten only where they
    read one, and the locals as (name, the call's text, the positions of the formulas that read it)). The
    generated backward computes each local once, when any formula that reads it is wanted. The largest shared
    calls are taken first; a call inside one of them is computed inside it."""
    trees = [ast.parse(text, mode="eval") for text in formulas]
    chosen: list[str] = []  # ast.dump of the shared calls
    candidates = sorted({key for tree in trees for key in _calls_outside(tree, ())}, key=len, reverse=True)
    for key in candidates:
        if sum(key in _calls_outside(tree, chosen) for tree in trees) > 1:
            chosen.append(key)
    if not chosen:
        return list(formulas), []
    readers = {key: tuple(i for i, tree in enumerate(trees) if key in _calls_outside(tree, chosen)) for key in chosen}
    local_names: dict[str, str] = {}
    texts: dict[str, str] = {}

    class Hoist(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            key = ast.dump(node)
            if key not in readers:
                return self.generic_visit(node)
            texts.setdefault(key, ast.unparse(node))
            name = local_names.setdefault(key, f"_shared_{len(local_names)}")
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)

    rewritten = [ast.unparse(Hoist().visit(tree)) if any(i in r for r in readers.values()) else text
                 for i, (tree, text) in enumerate(zip(trees, formulas, strict=True))]  # fmt: skip
    return rewritten, [(local_names[key], texts[key], readers[key]) for key in local_names]


def _calls_outside(tree: ast.AST, shared: tuple[str, ...] | list[str]) -> set[str]:
    """ast.dump of every call in the tree that is not inside one of the `shared` calls (those themselves
    included)."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            key = ast.dump(node)
            found.add(key)
            if key in shared:
                continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _method(spec: OpSpec, args: tuple[Argument, ...], no_out: str) -> dict[str, str]:
    """The Tensor method: the function with self first (`no_out`: what it passes for the function's
    out=, if any). Reductions also take numpy's dtype= and out=, because np.sum(t) and friends call
    t.sum(axis=..., dtype=None, out=None)."""
    rest = _py_arguments(args[1:], method=True)
    params = ", ".join(f"{api.binding_cpp_type(spec, a)} {a.name}" for a in args)
    names = ", ".join(a.name for a in args)
    if no_out:
        wrapper = f"[{spec.name}]({params}) {{ return {spec.name}({names}{no_out}); }}"
        return {"callable": wrapper, "arguments": f", {rest}" if rest else ""}
    if not spec.family.numpy_method_keywords:
        return {"callable": spec.name, "arguments": f", {rest}" if rest else ""}
    if any(a.name == "dtype" for a in args):  # sum and prod take dtype= themselves: numpy's out= is left
        wrapper = (f"[{spec.name}]({params}, pybind11::object out) {{ "
                   f"ts::python::require_default_numpy_keywords(pybind11::none(), out); return {spec.name}({names}); }}")  # fmt: skip
        return {"callable": wrapper, "arguments": f', {rest}, py::arg("out") = pybind11::none()'}
    wrapper = (f"[{spec.name}]({params}, pybind11::object dtype, pybind11::object out) {{ "
               f"ts::python::require_default_numpy_keywords(dtype, out); return {spec.name}({names}); }}")  # fmt: skip
    keywords = 'py::arg("dtype") = pybind11::none(), py::arg("out") = pybind11::none()'
    return {"callable": wrapper, "arguments": f", {rest}, {keywords}"}


def _py_arguments(args: tuple[Argument, ...], method: bool) -> str:
    """pybind11 argument annotations. Methods take their options positionally too, as
    numpy's do (``t.sum(0)``); functions follow the signature's '/' and '*'."""
    parts: list[str] = []
    for i, arg in enumerate(args):
        if arg.kind == "variadic":  # a py::args parameter: pybind11 takes no annotation for it, and makes the
            continue  # arguments after it keyword-only itself
        if not method and arg.kind == "keyword" and (i == 0 or args[i - 1].kind not in ("keyword", "variadic")):
            parts.append("py::kw_only()")
        default = api.binding_default(arg)
        parts.append(f'py::arg("{arg.name}")' + (f" = {default}" if default else ""))
        if not method and arg.kind == "positional" and (i + 1 == len(args) or args[i + 1].kind != "positional"):
            parts.append("py::pos_only()")
    return ", ".join(parts)


def _engine_call(spec: OpSpec) -> str:
    names = [a.name for a in spec.signature.tensor_arguments]
    handles = ", ".join(names)
    labels = ", ".join(f'"{n}"' for n in names)
    tensors = f"ts::python::tensor_operands(*op, {{{handles}}}, {{{labels}}})"
    given = {a.name for a in spec.signature.arguments}  # an optional argument the spec leaves out: its default
    options = {a.name: a.name if a.name in given else api.binding_default(a) for a in spec.family.optional_arguments}
    return spec.family.engine_call.format(tensors=tensors, handles=handles, labels=labels,
                                          scalars=", ".join(api.own_scalars(spec)), **options)


def sources_context(catalog: Catalog, header: str) -> dict[str, object]:
    def kernels(device: str) -> list[str]:
        return [f"generated/{api.kernel_path(spec, device)}" for spec in catalog.ops]

    shared = ["generated/registration.cpp", "generated/bindings.cpp"]
    return {"header": header, "sources": shared, "kernel_sources": kernels("cpu"), "cuda_sources": kernels("cuda")}


def stub_context(catalog: Catalog, header: str) -> dict[str, object]:
    functions = []
    for spec in catalog.ops:
        functions.append({"name": spec.name, "signature": _pyi_function_signature(spec), "doc": spec.doc})
    for composite in catalog.composites:
        # the core's functions take tensorsmith Tensors only
        functions.append({"name": composite.name, "doc": composite.doc,
                          "signature": _pyi_signature(composite.signature.arguments, array_like=False,
                                                      returns=api.pyi_return(composite.signature))})  # fmt: skip
    by_name = {spec.name: spec for spec in catalog.ops}
    for alias in catalog.aliases:
        target = by_name[alias.alias_of]
        functions.append({"name": alias.name, "signature": _pyi_function_signature(target), "doc": alias.doc})
    methods = [
        {"name": spec.name, "signature": _pyi_signature(spec.signature.arguments[1:], self_arg=True), "doc": spec.doc}
        for spec in catalog.ops
        if Variant.method in spec.variants
    ]
    for method in methods:  # numpy's dtype=/out= on reduction methods (see _method)
        if catalog.op(method["name"]).family.numpy_method_keywords:
            method["signature"] = method["signature"].replace(") -> Tensor", ", dtype: None = None, out: None = None) -> Tensor")
    operators = [
        {"name": dunder, "signature": "(self, other: Tensor | ArrayLike)" if len(spec.signature.tensor_arguments) == 2 else "(self)"}
        for spec in catalog.ops
        for dunder in spec.operators
    ]
    return {
        "header": header,
        "dtypes": DTYPES,
        "functions": sorted(functions, key=lambda f: f["name"]),
        "methods": methods,
        "operators": sorted(operators, key=lambda o: o["name"]),
    }


def _pyi_function_signature(spec: OpSpec) -> str:
    signature = _pyi_signature(spec.signature.arguments)
    if not api.takes_out(spec):
        return signature
    star = "" if any(a.kind == "keyword" for a in spec.signature.arguments) else "*, "
    return signature.replace(") -> Tensor", f", {star}out: Tensor | tuple[Tensor] | None = None) -> Tensor")


def _pyi_signature(args: tuple[Argument, ...], self_arg: bool = False, array_like: bool = True, returns: str = "Tensor") -> str:
    parts = ["self"] if self_arg else []
    for i, arg in enumerate(args):
        if not self_arg and arg.kind == "keyword" and (i == 0 or args[i - 1].kind not in ("keyword", "variadic")):
            parts.append("*")  # methods take their options positionally too (see _py_arguments)
        default = "" if arg.default is None else f" = {arg.default}"
        star = "*" if arg.kind == "variadic" else ""
        parts.append(f"{star}{arg.name}: {api.pyi_type(arg, array_like)}{default}")
        if not self_arg and arg.kind == "positional" and (i + 1 == len(args) or args[i + 1].kind != "positional"):
            parts.append("/")
    return f"({', '.join(parts)}) -> {returns}"


def cpp_string(text: str) -> str:
    """A C++ string literal (JSON escapes are valid C++ escapes for these characters)."""
    return json.dumps(text, ensure_ascii=True)


BODY_PLACEHOLDER = "/* YOUR BODY */"


def task_context(spec: OpSpec, device: str, translation_unit: str, example: tuple[str, str] | None,
                 constraints: list[str]) -> dict[str, object]:  # fmt: skip
    """What `tsgen task` prints and the Claude proposer sends: the same text for every proposer."""
    example_op, example_body = example or ("", "")
    return {
        "op": spec.name,
        "device": device,
        "signature": str(spec.signature),
        "family": spec.family.name,
        "family_contract": spec.family.contract_for(device),
        "kernel_dtypes": api.kernel_dtypes(spec),
        "doc": spec.doc,
        "spec_path": spec.path,
        "spec_text": spec.kernel_text,
        "reference": spec.reference.source,
        "placeholder": BODY_PLACEHOLDER,
        "translation_unit": translation_unit,
        "constraints": constraints,
        "example_op": example_op,
        "example_body": example_body,
    }
