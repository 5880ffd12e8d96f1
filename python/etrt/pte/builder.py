"""Building a ``.pte``: :class:`Program` holds methods (:class:`Method`) made
of values and delegate calls, lays them out as the schema's JSON, has flatc
encode it, adds the extended header and the segments, verifies the result
and writes it atomically (:func:`write_atomic`).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .. import dtypes
from ..dtypes import DTYPES
from .format import (EXTENDED_HEADER_LENGTH, EXTENDED_HEADER_MAGIC, FILE_IDENTIFIER, INT32_MAX, MAX_RANK,
                     PLANNED_MEMORY_ID, PLANNED_TENSOR_ALIGNMENT, SCHEMA_VERSION, SEGMENT_ALIGNMENT, PteError)
from .schema import load_schema
from .toolchain import SCHEMA_FILES, Toolchain, ToolchainError, find_toolchain, run_flatc
from .verify import verify_pte_bytes

__all__ = ["DELEGATE_STORAGES", "Method", "Program", "write_atomic"]

#: Where a Program puts its delegate blobs.
DELEGATE_STORAGES = ("segment", "inline")


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _dtype(name: Any) -> str:
    key = dtypes.canonical(name)
    if key is None:
        raise PteError(dtypes.unknown_dtype(name))
    return key


def _as_bytes(v: Any, what: str) -> bytes:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    raise PteError(f"{what} must be bytes or str, not {type(v).__name__}")


@dataclass
class _Value:
    name: str
    kind: str  # tensor | int | bool | double
    dtype: Optional[str] = None
    sizes: Tuple[int, ...] = ()
    dynamic: bool = False
    dim_order: Tuple[int, ...] = ()
    planned: bool = True
    scalar: Any = None

    @property
    def nbytes(self) -> int:
        assert self.dtype is not None
        return DTYPES[self.dtype][1] * math.prod(self.sizes)


@dataclass
class _DelegateCall:
    backend_id: str
    blob: bytes
    args: List[str]
    compile_specs: List[Tuple[str, bytes]]


class Method:
    """One ExecutionPlan: values, inputs/outputs and delegate calls in order.

    Created by :meth:`Program.method`. Names are local to the method and are
    not stored in the .pte (the format has no value names).
    """

    def __init__(self, name: str, inputs: Optional[Sequence[str]] = None,
                 outputs: Optional[Sequence[str]] = None) -> None:
        if not name or not isinstance(name, str):
            raise PteError("a method needs a non-empty name")
        self.name = name
        self.inputs: List[str] = list(inputs or [])
        self.outputs: List[str] = list(outputs or [])
        self._values: Dict[str, _Value] = {}
        self._calls: List[_DelegateCall] = []

    # -- values ----------------------------------------------------------
    def _add(self, v: _Value) -> str:
        if not v.name or not isinstance(v.name, str):
            raise PteError(f"method {self.name!r}: a value needs a non-empty string name")
        if v.name in self._values:
            raise PteError(f"method {self.name!r}: value {v.name!r} is defined twice")
        self._values[v.name] = v
        return v.name

    def tensor(self, name: str, dtype: str, sizes: Sequence[int], dynamic: bool = False,
               *, dim_order: Optional[Sequence[int]] = None, planned: bool = True) -> str:
        """Declares a tensor. ``sizes`` is the shape, or its upper bound when
        ``dynamic`` (serialized as DYNAMIC_BOUND). ``planned=False`` leaves it
        without a planned slot: the runtime then shares the caller's memory
        for an input, and an output needs ``Module::set_output``."""
        dt = _dtype(dtype)
        try:
            sz = tuple(int(s) for s in sizes)
        except (TypeError, ValueError):
            raise PteError(f"method {self.name!r}: tensor {name!r} sizes must be integers: {sizes!r}")
        if len(sz) > MAX_RANK:
            raise PteError(f"method {self.name!r}: tensor {name!r} has rank {len(sz)} > {MAX_RANK}")
        for s in sz:
            if s < 0 or s > INT32_MAX:
                raise PteError(f"method {self.name!r}: tensor {name!r} size {s} outside 0..{INT32_MAX}")
        order = tuple(range(len(sz))) if dim_order is None else tuple(int(d) for d in dim_order)
        if sorted(order) != list(range(len(sz))):
            raise PteError(f"method {self.name!r}: tensor {name!r} dim_order {list(order)} "
                           f"is not a permutation of 0..{len(sz) - 1}")
        return self._add(_Value(name, "tensor", dtype=dt, sizes=sz, dynamic=bool(dynamic),
                                dim_order=order, planned=bool(planned)))

    def int_value(self, name: str, value: int) -> str:
        """Declares an Int EValue (e.g. a SymInt argument to a delegate). As a
        method input, the runtime requires callers to pass this same value."""
        if isinstance(value, bool) or not isinstance(value, int) or not -2**63 <= value < 2**63:
            raise PteError(f"method {self.name!r}: int value {name!r} must be a 64-bit int")
        return self._add(_Value(name, "int", scalar=value))

    def bool_value(self, name: str, value: bool) -> str:
        return self._add(_Value(name, "bool", scalar=bool(value)))

    def double_value(self, name: str, value: float) -> str:
        return self._add(_Value(name, "double", scalar=float(value)))

    def set_io(self, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        self.inputs, self.outputs = list(inputs), list(outputs)

    # -- instructions ----------------------------------------------------
    def delegate_call(self, backend_id: str, blob: Union[bytes, bytearray, memoryview],
                      args: Sequence[str],
                      compile_specs: Optional[Union[Mapping[str, Any], Iterable[Tuple[str, Any]]]] = None
                      ) -> int:
        """Appends a BackendDelegate and a DelegateCall instruction. ``args``
        are value names, inputs first then outputs, as the backend expects
        them. Returns the delegate's index in this method."""
        if not backend_id or not isinstance(backend_id, str):
            raise PteError(f"method {self.name!r}: delegate_call needs a backend id")
        if not isinstance(blob, (bytes, bytearray, memoryview)):
            raise PteError(f"method {self.name!r}: the blob for {backend_id!r} must be bytes")
        items = compile_specs.items() if isinstance(compile_specs, Mapping) else (compile_specs or [])
        specs = []
        for key, val in items:
            if not key or not isinstance(key, str):
                raise PteError(f"method {self.name!r}: compile spec keys must be non-empty strings")
            specs.append((key, _as_bytes(val, f"compile spec {key!r}")))
        self._calls.append(_DelegateCall(backend_id, bytes(blob), [str(a) for a in args], specs))
        return len(self._calls) - 1

    # -- checks and layout ------------------------------------------------
    def _check(self) -> None:
        where = f"method {self.name!r}"
        for role, names in (("input", self.inputs), ("output", self.outputs)):
            for n in names:
                if n not in self._values:
                    raise PteError(f"{where}: {role} {n!r} is not a declared value")
        if len(set(self.inputs)) != len(self.inputs):
            raise PteError(f"{where}: an input is listed twice: {self.inputs}")
        for i, c in enumerate(self._calls):
            for a in c.args:
                if a not in self._values:
                    raise PteError(f"{where}: delegate call {i} ({c.backend_id}) argument {a!r} "
                                   "is not a declared value")

    def memory_plan(self) -> Tuple[Dict[str, Tuple[int, int]], int]:
        """({tensor name: (offset, nbytes)}, buffer size) of planned buffer 1:
        every planned tensor at its upper-bound size, 16-byte aligned, in
        declaration order, no sharing."""
        plan: Dict[str, Tuple[int, int]] = {}
        cursor = 0
        for v in self._values.values():
            if v.kind == "tensor" and v.planned:
                cursor = _align(cursor, PLANNED_TENSOR_ALIGNMENT)
                plan[v.name] = (cursor, v.nbytes)
                cursor += v.nbytes
        return plan, _align(cursor, PLANNED_TENSOR_ALIGNMENT)

    def _to_json(self, delegate_refs: Sequence[Tuple[str, int]]) -> Dict[str, Any]:
        index = {n: i for i, n in enumerate(self._values)}
        plan, total = self.memory_plan()
        values = []
        for v in self._values.values():
            if v.kind == "tensor":
                t: Dict[str, Any] = {
                    "scalar_type": DTYPES[v.dtype][0],  # type: ignore[index]
                    "storage_offset": 0,
                    "sizes": list(v.sizes),
                    "dim_order": list(v.dim_order),
                    "requires_grad": False,
                    "data_buffer_idx": 0,
                    "layout": 0,
                    "shape_dynamism": "DYNAMIC_BOUND" if v.dynamic else "STATIC",
                }
                if v.name in plan:
                    off = plan[v.name][0]
                    t["allocation_info"] = {
                        "memory_id": PLANNED_MEMORY_ID,
                        "memory_offset_low": off & 0xFFFFFFFF,
                        "memory_offset_high": off >> 32,
                    }
                values.append({"val_type": "Tensor", "val": t})
            elif v.kind == "int":
                values.append({"val_type": "Int", "val": {"int_val": v.scalar}})
            elif v.kind == "bool":
                values.append({"val_type": "Bool", "val": {"bool_val": v.scalar}})
            else:
                d = v.scalar
                if not math.isfinite(d):
                    d = "nan" if math.isnan(d) else ("inf" if d > 0 else "-inf")
                values.append({"val_type": "Double", "val": {"double_val": d}})
        inputs = [index[n] for n in self.inputs]
        outputs = [index[n] for n in self.outputs]
        delegates, instructions = [], []
        for i, (c, (loc, ref)) in enumerate(zip(self._calls, delegate_refs)):
            delegates.append({
                "id": c.backend_id,
                "processed": {"location": loc, "index": ref},
                "compile_specs": [{"key": k, "value": list(v)} for k, v in c.compile_specs],
            })
            instructions.append({"instr_args_type": "DelegateCall",
                                 "instr_args": {"delegate_index": i,
                                                "args": [index[a] for a in c.args]}})
        n_in, n_out = len(inputs), len(outputs)
        # pytree specs as EXIR writes them: ((x, ...), {}) in, tuple/leaf out.
        inp_spec = f"T2#{n_in}#0(T{n_in}{'#1' * n_in}({','.join('$' * n_in)}),D0())"
        out_spec = "$" if n_out == 1 else f"T{n_out}{'#1' * n_out}({','.join('$' * n_out)})"
        return {
            "name": self.name,
            "container_meta_type": {"encoded_inp_str": inp_spec, "encoded_out_str": out_spec},
            "values": values,
            "inputs": inputs,
            "outputs": outputs,
            "chains": [{"inputs": inputs, "outputs": outputs, "instructions": instructions}],
            "operators": [],
            "delegates": delegates,
            "non_const_buffer_sizes": [0, total] if plan else [0],
        }


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where the OS allows
    (Linux's /proc/self/status); elsewhere set and restored under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_atomic(path: Union[str, os.PathLike], data: bytes) -> None:
    """Writes ``data`` to ``path`` through a temporary file in the same folder
    and a rename, so a reader never sees a half-written ``.pte``. The file gets
    the mode a plain ``open(path, "w")`` would give a new file, 0666 minus the
    umask (the temporary file's own 0600 is not kept, nor the mode of a file
    it replaces)."""
    parent = os.path.dirname(os.path.abspath(os.fspath(path)))
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".etrt-", suffix=".pte", dir=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class Program:
    """Builds a .pte holding one or more methods made of delegate calls.

    ``delegate_storage``: ``"segment"`` (default; blobs follow the flatbuffer,
    128-byte aligned, behind an ``eh00`` extended header; good for large
    engines) or ``"inline"`` (blobs in Program.backend_delegate_data,
    ``delegate_alignment``-byte aligned, default 16 from the schema; blobs go
    through flatc's JSON, so keep them small). Identical blobs are stored once.

    The value/call helpers on Program (``tensor``, ``int_value``,
    ``delegate_call``, ...) act on the most recently created method, creating
    ``"forward"`` first if there is none.
    """

    def __init__(self, delegate_storage: str = "segment", *,
                 delegate_alignment: Optional[int] = None,
                 segment_alignment: int = SEGMENT_ALIGNMENT,
                 named_data_table: bool = True) -> None:
        if delegate_storage not in DELEGATE_STORAGES:
            raise PteError(f"delegate_storage must be one of {DELEGATE_STORAGES}, not {delegate_storage!r}")
        for what, a in (("delegate_alignment", delegate_alignment), ("segment_alignment", segment_alignment)):
            if a is not None and (not isinstance(a, int) or a <= 0 or a & (a - 1)):
                raise PteError(f"{what} must be a power of two, not {a!r}")
        self.delegate_storage = delegate_storage
        self.delegate_alignment = delegate_alignment
        self.segment_alignment = segment_alignment
        self.named_data_table = bool(named_data_table)
        self.methods: List[Method] = []

    def method(self, name: str, inputs: Optional[Sequence[str]] = None,
               outputs: Optional[Sequence[str]] = None) -> Method:
        if any(m.name == name for m in self.methods):
            raise PteError(f"method {name!r} is defined twice")
        m = Method(name, inputs, outputs)
        self.methods.append(m)
        return m

    def _current(self) -> Method:
        return self.methods[-1] if self.methods else self.method("forward")

    def tensor(self, name: str, dtype: str, sizes: Sequence[int], dynamic: bool = False, **kw: Any) -> str:
        return self._current().tensor(name, dtype, sizes, dynamic, **kw)

    def int_value(self, name: str, value: int) -> str:
        return self._current().int_value(name, value)

    def delegate_call(self, backend_id: str, blob: bytes, args: Sequence[str],
                      compile_specs: Optional[Mapping[str, Any]] = None) -> int:
        return self._current().delegate_call(backend_id, blob, args, compile_specs)

    def set_io(self, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        self._current().set_io(inputs, outputs)

    # -- serialization ----------------------------------------------------
    def _layout(self) -> Tuple[Dict[str, Any], List[bytes], List[bytes]]:
        """Returns (program JSON, inline blobs, segment blobs)."""
        if not self.methods:
            raise PteError("a program needs at least one method")
        for m in self.methods:
            m._check()
        inline: List[bytes] = []
        seg_blobs: List[bytes] = []
        inline_idx: Dict[bytes, int] = {}
        seg_idx: Dict[bytes, int] = {}
        plans = []
        for m in self.methods:
            refs = []
            for c in m._calls:
                if self.delegate_storage == "segment" and c.blob:
                    if c.blob not in seg_idx:
                        seg_idx[c.blob] = len(seg_blobs)
                        seg_blobs.append(c.blob)
                    # segment 0 is the (empty) constant segment
                    refs.append(("SEGMENT", 1 + seg_idx[c.blob]))
                else:
                    if c.blob not in inline_idx:
                        inline_idx[c.blob] = len(inline)
                        inline.append(c.blob)
                    refs.append(("INLINE", inline_idx[c.blob]))
            plans.append(m._to_json(refs))
        segments = [{"offset": 0, "size": 0}]
        end = 0
        for b in seg_blobs:
            off = _align(end, self.segment_alignment)
            segments.append({"offset": off, "size": len(b)})
            end = off + len(b)
        program = {
            "version": SCHEMA_VERSION,
            "execution_plan": plans,
            "constant_buffer": [],
            "backend_delegate_data": [{"data": f"@@ETRT_INLINE_{i}@@"} for i in range(len(inline))],
            "segments": segments,
            # offsets[0] is the placeholder that non-constant tensors
            # (data_buffer_idx 0) point at; one entry = no constants.
            "constant_segment": {"segment_index": 0, "offsets": [0]},
        }
        # An empty named-data table, or none (named_data_table=False), as ExecuTorch 1.5.1's exporter writes for a
        # program without named data: ExecuTorch then gives the delegates no NamedDataMap at all. Neither changes what
        # runs (delegate-owned state is scoped to one load, not to the table: docs/design.md, decision 18).
        if self.named_data_table:
            program["named_data"] = []
        return program, inline, seg_blobs

    def to_json(self) -> Dict[str, Any]:
        """The Program as flatc JSON (inline blobs as lists of ints)."""
        program, inline, _ = self._layout()
        for i, b in enumerate(inline):
            program["backend_delegate_data"][i]["data"] = list(b)
        return program

    def to_bytes(self, toolchain: Optional[Toolchain] = None) -> bytes:
        tc = toolchain or find_toolchain()
        schema = load_schema(tc)
        program, inline, seg_blobs = self._layout()
        text = json.dumps(program, indent=None)
        for i, b in enumerate(inline):
            text = text.replace(f'"@@ETRT_INLINE_{i}@@"', "[" + ",".join(map(str, b)) + "]", 1)
        with tempfile.TemporaryDirectory(prefix="etrt-pte-") as tmp:
            schema_dir = os.path.join(tmp, "schema")
            os.mkdir(schema_dir)
            for name in SCHEMA_FILES:
                with open(os.path.join(tc.schema_dir, name), encoding="utf-8") as f:
                    src = f.read()
                if self.delegate_alignment is not None:
                    src = "\n".join(
                        re.sub(r"\(\s*force_align\s*:\s*\d+\s*\)",
                               f"(force_align: {self.delegate_alignment})", line)
                        if "@executorch-delegate-alignment" in line else line
                        for line in src.splitlines())
                with open(os.path.join(schema_dir, name), "w", encoding="utf-8") as f:
                    f.write(src)
            json_path = os.path.join(tmp, "program.json")
            with open(json_path, "w", encoding="utf-8") as f:
                f.write(text)
            out_dir = os.path.join(tmp, "out")
            os.mkdir(out_dir)
            run_flatc(tc, ["--binary", "-o", out_dir, os.path.join(schema_dir, "program.fbs"), json_path],
                       "encoding the program")
            produced = os.listdir(out_dir)
            if len(produced) != 1:
                raise ToolchainError(f"flatc produced {produced} instead of one binary")
            with open(os.path.join(out_dir, produced[0]), "rb") as f:
                fb = f.read()
        identifier = schema.file_identifier or FILE_IDENTIFIER
        if fb[4:8] != identifier:
            raise ToolchainError(f"flatc output has identifier {fb[4:8]!r}, expected {identifier!r}")
        if not seg_blobs:
            data = fb
        else:
            max_align = max(schema.max_force_align, self.delegate_alignment or 1)
            header_len = _align(EXTENDED_HEADER_LENGTH, max_align)
            program_size = len(fb) + header_len
            base = _align(program_size, self.segment_alignment)
            seg_data = bytearray()
            for b in seg_blobs:
                seg_data += b"\0" * (_align(len(seg_data), self.segment_alignment) - len(seg_data))
                seg_data += b
            header = (EXTENDED_HEADER_MAGIC + struct.pack("<IQQQ", EXTENDED_HEADER_LENGTH, program_size,
                                                          base, len(seg_data)))
            header += b"\0" * (header_len - len(header))
            root = struct.unpack_from("<I", fb, 0)[0]
            data = (struct.pack("<I", root + header_len) + fb[4:8] + header + fb[8:]
                    + b"\0" * (base - program_size) + bytes(seg_data))
        verify_pte_bytes(data, tc)  # self-check before anything is written
        return data

    def write(self, path: Union[str, os.PathLike], toolchain: Optional[Toolchain] = None) -> Dict[str, Any]:
        """Writes the .pte (atomically) and returns a summary:
        ``{"path", "size", "delegate_storage", "methods": {name:
        {"non_const_buffer_sizes", "tensors": {name: {"offset", "nbytes"}}}}}``."""
        data = self.to_bytes(toolchain)
        path = os.fspath(path)
        write_atomic(path, data)
        methods = {}
        for m in self.methods:
            plan, total = m.memory_plan()
            methods[m.name] = {
                "non_const_buffer_sizes": [0, total] if plan else [0],
                "tensors": {n: {"offset": o, "nbytes": b} for n, (o, b) in plan.items()},
            }
        return {"path": path, "size": len(data), "delegate_storage": self.delegate_storage,
                "methods": methods}

