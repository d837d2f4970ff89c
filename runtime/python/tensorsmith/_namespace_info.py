"""The Array API's inspection utilities: ``ts.__array_namespace_info__()`` says what this build supports."""

from __future__ import annotations

from tensorsmith import _C

# What the standard names each dtype kind (isdtype's kinds), over the standard's dtypes this build has.
# float16 and bfloat16 are extensions: they work everywhere but the standard lists no kind for them.
_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
                "complex64", "complex128"),
}
_MAX_DIMENSIONS = 64  # ts::kMaxDims (tensorsmith/tensor.h): a tensor of more dimensions raises ValueError


class Info:
    """What ``__array_namespace_info__()`` returns (Array API 2024.12)."""

    __module__ = "tensorsmith"

    def capabilities(self) -> dict[str, object]:
        # x[mask] and the functions whose result shape depends on the data (nonzero, unique_*) exist.
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": _MAX_DIMENSIONS}

    def default_device(self) -> _C.Device:
        return _C.asarray(0).device

    def devices(self) -> list[_C.Device]:
        found = [self.default_device()]
        if _C.cuda.is_available():
            found += [_C.zeros((), device=f"cuda:{i}").device for i in range(_C.cuda.device_count())]
        return found

    def default_dtypes(self, *, device: object = None) -> dict[str, _C.DType]:
        self._check_device(device)
        return {"real floating": _C.float64, "complex floating": _C.complex128, "integral": _C.int64, "indexing": _C.int64}

    def dtypes(self, *, device: object = None, kind: str | tuple[str, ...] | None = None) -> dict[str, _C.DType]:
        self._check_device(device)
        kinds = (kind,) if isinstance(kind, str) else kind
        if kinds is None:
            names = ("bool", *_KINDS["numeric"])
        else:
            unknown = [k for k in kinds if k not in _KINDS]
            if unknown:
                raise ValueError(f"unknown dtype kind {unknown[0]!r} (known: {', '.join(_KINDS)})")
            names = tuple(n for k in kinds for n in _KINDS[k])
        return {name: _C.dtype(name) for name in dict.fromkeys(names)}

    def _check_device(self, device: object) -> None:
        if device is None:
            return
        names = {str(d) for d in self.devices()} | ({"cuda"} if _C.cuda.is_available() else set())
        if str(device) not in names:
            raise ValueError(f"device {device!r} is not one of this build's devices ({', '.join(sorted(names))})")


def __array_namespace_info__() -> Info:
    return Info()
