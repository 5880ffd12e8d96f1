"""Tensor dtypes: the one table of names etrt uses.

Every part of the package spells a dtype the same way (``float32``,
``int64``, ...) and accepts the same aliases (``float``, ``fp16``,
``torch.int64``, ``i8``, ...):

* the ``.pte`` writer and reader (:mod:`etrt.pte`) map a name to ExecuTorch's
  ``ScalarType`` (scalar_type.fbs) and back, with its element size;
* the blob's ``io_bindings`` and validation (:mod:`etrt.validate`) compare the
  names a blob gives with the program's tensors;
* the GPU-free NvInfer engine (:mod:`etrt.gpufree`, :mod:`etrt.engine_builder`)
  stores ``etrt::DataType`` values, a subset in their own order
  (:data:`DATA_TYPES`).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

__all__ = ["ALIASES", "DATA_TYPES", "DTYPES", "SCALAR_TYPE_TO_DTYPE", "canonical", "element_size", "normalize",
           "unknown_dtype"]

#: dtype name -> (ScalarType enum name in scalar_type.fbs, element size in bytes).
DTYPES: Dict[str, Tuple[str, int]] = {
    "float32": ("FLOAT", 4),
    "float16": ("HALF", 2),
    "bfloat16": ("BFLOAT16", 2),
    "float64": ("DOUBLE", 8),
    "int8": ("CHAR", 1),
    "uint8": ("BYTE", 1),
    "int16": ("SHORT", 2),
    "int32": ("INT", 4),
    "int64": ("LONG", 8),
    "bool": ("BOOL", 1),
}

#: Other spellings of the names of :data:`DTYPES` (compared lower-case, after
#: a ``torch.`` prefix is dropped).
ALIASES: Dict[str, str] = {
    "float": "float32", "half": "float16", "double": "float64", "long": "int64", "int": "int32",
    "fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "f32": "float32", "f16": "float16",
    "i8": "int8", "u8": "uint8", "i32": "int32", "i64": "int64", "char": "int8", "byte": "uint8",
}

#: ScalarType enum name -> dtype name.
SCALAR_TYPE_TO_DTYPE: Dict[str, str] = {st: name for name, (st, _) in DTYPES.items()}

#: etrt::DataType values in enum order (the GPU-free NvInfer's and the C++
#: runtime's dtypes), spelled as in :data:`DTYPES`.
DATA_TYPES: Tuple[str, ...] = ("float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool")


def normalize(name: Any) -> str:
    """``name`` lower-cased, without a ``torch.`` prefix, aliases resolved.
    Unknown names come back normalized but are not checked (see :func:`canonical`)."""
    key = str(name).strip().lower()
    if key.startswith("torch."):
        key = key[len("torch."):]
    return ALIASES.get(key, key)


def canonical(name: Any) -> Optional[str]:
    """The name in :data:`DTYPES` that ``name`` spells, or None."""
    key = normalize(name)
    return key if key in DTYPES else None


def unknown_dtype(name: Any) -> str:
    """The message for a name :func:`canonical` does not know."""
    return f"unknown dtype {name!r}; known: {', '.join(DTYPES)}"


def element_size(name: str) -> int:
    """Bytes per element of a dtype of :data:`DTYPES`."""
    return DTYPES[name][1]
