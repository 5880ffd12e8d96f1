"""Where a program's memory lives: ExecuTorch 1.5 can place tensors on a
device. A delegate exported with a ``target_device`` compile spec (every
Torch-TensorRT export: its partitioner adds ``target_device=cuda:<n>``) gets
its inputs and outputs tagged with that device (``Tensor.extra_tensor_info``),
a planned buffer on the device (``ExecutionPlan.non_const_buffer_device``) and
``et_copy::_h2d_copy.out`` / ``_d2h_copy.out`` kernels around each call. The
runtime allocates such a buffer and runs those copies through the
``DeviceAllocator`` registered for the device type, and refuses the method
at load when there is none.

:func:`program_placement` reads all of it from a :func:`etrt.pte.read_pte`
result; ``etrt inspect`` prints it and ``etrt validate`` warns about it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from ..pte.format import device_name as _device_name, device_of

__all__ = ["COPY_OPS", "Buffer", "Copy", "MethodPlacement", "device_of", "program_placement"]

#: The copy kernels ExecuTorch inserts around a device-placed delegate call, by direction.
COPY_OPS = {"et_copy::_h2d_copy": "host-to-device", "et_copy::_d2h_copy": "device-to-host"}



@dataclass
class Buffer:
    """One planned (non-constant) buffer of a method: its index in
    ``non_const_buffer_sizes`` (0 is reserved), size and device."""
    index: int
    size: int
    device: str


@dataclass
class Copy:
    """One host/device copy kernel call: chain, instruction, the op's name and
    overload, and the value indices it copies from and into."""
    chain: int
    instruction: int
    op: str
    direction: str
    source: Optional[int]
    destination: Optional[int]


@dataclass
class MethodPlacement:
    name: str
    buffers: List[Buffer] = field(default_factory=list)
    copies: List[Copy] = field(default_factory=list)
    #: value index -> device, for every tensor not on the CPU
    device_values: Dict[int, str] = field(default_factory=dict)
    #: value index -> where its memory is instead, for every tensor on a device whose memory is not planned on that
    #: device: "buffer <i> on cpu" (ExecuTorch's legacy planning, enable_non_cpu_memory_planning=False, plans every
    #: tensor in host memory) or "not planned" (the caller gives it)
    misplaced: Dict[int, str] = field(default_factory=dict)

    @property
    def devices(self) -> List[str]:
        """The non-CPU devices the method's memory plan or tensors use, sorted."""
        return sorted({b.device for b in self.buffers if b.device != "cpu"} | set(self.device_values.values()))

    @property
    def buffer_devices(self) -> List[str]:
        """The non-CPU devices the method's planned buffers are on, sorted: what a device allocator must give."""
        return sorted({b.device for b in self.buffers if b.device != "cpu"})

    def device_bytes(self, device: str) -> int:
        return sum(b.size for b in self.buffers if b.device == device)


def _buffer_devices(plan: Mapping[str, Any]) -> Dict[int, str]:
    out = {}
    for entry in plan.get("non_const_buffer_device") or []:
        out[int(entry.get("buffer_idx", 0))] = _device_name(entry)
    return out


def _memory_of(tensor: Mapping[str, Any], buffer_devices: Mapping[int, str]) -> Optional[str]:
    """The device of the planned buffer a tensor's memory is in, "" when the tensor is not planned (the caller gives
    its memory), None for a constant."""
    if tensor.get("data_buffer_idx", 0) > 0:
        return None
    info = tensor.get("allocation_info")
    if info is None:
        return ""
    return buffer_devices.get(int(info.get("memory_id", 0)), "cpu")


def program_placement(pte: Mapping[str, Any]) -> List[MethodPlacement]:
    """One :class:`MethodPlacement` per method of a :func:`etrt.pte.read_pte` result."""
    out = []
    for plan in (pte.get("program") or {}).get("execution_plan") or []:
        m = MethodPlacement(str(plan.get("name")))
        devices = _buffer_devices(plan)
        for i, size in enumerate(plan.get("non_const_buffer_sizes") or []):
            if i == 0:
                continue  # reserved by ExecuTorch's memory planning
            m.buffers.append(Buffer(i, int(size), devices.get(i, "cpu")))
        for vi, value in enumerate(plan.get("values") or []):
            if value.get("val_type") == "Tensor":
                tensor = value.get("val") or {}
                device = device_of(tensor)
                if device != "cpu":
                    m.device_values[vi] = device
                    where = _memory_of(tensor, devices)
                    if where is not None and where != device:
                        m.misplaced[vi] = ("not planned" if where == "" else
                                           f"buffer {tensor['allocation_info'].get('memory_id', 0)} on {where}")
        operators = plan.get("operators") or []
        for ci, chain in enumerate(plan.get("chains") or []):
            for ii, instr in enumerate(chain.get("instructions") or []):
                if instr.get("instr_args_type") != "KernelCall":
                    continue
                a = instr.get("instr_args") or {}
                oi = a.get("op_index", -1)
                if not 0 <= oi < len(operators):
                    continue
                name = operators[oi].get("name") or ""
                if name not in COPY_OPS:
                    continue
                args = list(a.get("args") or [])
                overload = operators[oi].get("overload") or ""
                m.copies.append(Copy(ci, ii, f"{name}.{overload}" if overload else name, COPY_OPS[name],
                                     args[0] if args else None, args[1] if len(args) > 1 else None))
        out.append(m)
    return out
