"""Device placement: where a program's memory lives (ExecuTorch 1.5 places
the arguments of a delegate exported with a ``target_device`` compile spec
on that device) against what the runtime named by ``--runtime`` does with
it, so that validate refuses where the runtime refuses:

* ``needs-cuda-device-allocator``: memory planned on CUDA, which loads only
  where a CUDA device allocator gives it (a CUDA build of etrt, ExecuTorch's
  CUDA backend); a CPU build of etrt refuses it at load;
* ``host-engine-on-device``: a host engine behind arguments placed on a
  device, which the call refuses (the runtime's own rule and words, through
  the C ABI's ``etrt_host_engine_binds``);
* ``device-tensor-in-host-memory``: tensors placed on a device whose memory
  is planned on the host or given by the caller (ExecuTorch's legacy planning,
  ``enable_non_cpu_memory_planning=False``), which no runtime runs.

The CUDA-mode engine on a build without CUDA is
:meth:`etrt.validate.delegate_checks._DelegateChecks.check_machine`'s."""

from __future__ import annotations

from typing import Any, List, Mapping

from ..analysis import DelegateInfo
from .result import ERROR, WARNING

#: What ``runtime`` (etrt validate --runtime) may name: the runtime the program will meet.
RUNTIMES = {
    "unknown": "not said",
    "cpu": "a CPU build of etrt: no CUDA memory, no CUDA-mode engines or TensorRT plans",
    "cuda": "a CUDA build of etrt (its CUDA device allocator, or that of ExecuTorch's CUDA backend loaded first)",
}

#: How to export a program the CPU build runs, or get the build the program needs.
_CUDA_BUILD = "a CUDA build of etrt (-DETRT_WITH_CUDA=ON; pip: ETRT_CMAKE_ARGS=\"-DETRT_WITH_CUDA=ON\")"


class _PlacementChecks:
    """The device-placement checks; mixed into :class:`etrt.validate.checker._Checker`, whose ``add`` records a
    finding."""

    def check_device_placement(self, pte: Mapping[str, Any], runtime: str) -> None:
        """A method with memory planned on a device (a delegate exported with a ``target_device`` compile spec,
        as Torch-TensorRT's partitioner always adds) loads only where a ``DeviceAllocator`` gives it: ExecuTorch
        allocates the buffer and runs the ``et_copy`` kernels through it. The CUDA build of etrt registers one; the
        build without CUDA registers one that refuses, naming the fix; ExecuTorch alone refuses the method without
        one. And every tensor placed on a device must be planned there (:meth:`check_misplaced`)."""
        from ..analysis import program_placement

        for m in program_placement(pte):
            self.check_misplaced(m)
            devices = m.buffer_devices
            if not devices or runtime == "cuda":
                continue
            cuda = [d for d in devices if d.startswith("cuda")]
            other = [d for d in devices if not d.startswith("cuda")]
            sizes = ", ".join(f"{m.device_bytes(d)} bytes on {d}" for d in devices)
            copies = (f"; {len(m.copies)} host/device copy kernel(s) (et_copy::_h2d_copy.out / _d2h_copy.out) "
                      "run through it" if m.copies else "")
            needs = (f"method '{m.name}' places memory on {', '.join(devices)} ({sizes}{copies}), the program "
                     "having been exported with a target_device compile spec (Torch-TensorRT's partitioner always "
                     "adds one)")
            if other:
                self.add(WARNING, "needs-device-allocator",
                         f"{needs}; ExecuTorch refuses the method at load without a device allocator for that device "
                         "type, and etrt registers one only for CUDA")
            if not cuda:
                continue
            if runtime == "cpu":
                self.add(ERROR, "needs-cuda-device-allocator",
                         f"{needs}; the runtime named (--runtime cpu: a CPU build of etrt) has no CUDA memory, so "
                         "loading the method fails at its first device buffer (etrt's CUDA device allocator: "
                         "\"this libetrt was built without CUDA\"). Run it with "
                         f"{_CUDA_BUILD} or with ExecuTorch's CUDA backend, or export without the target_device "
                         "compile spec")
            else:
                self.add(WARNING, "needs-cuda-device-allocator",
                         f"{needs}; it loads only where a CUDA device allocator gives that memory: {_CUDA_BUILD}, "
                         "which registers one when libetrt loads, or ExecuTorch's CUDA backend. A CPU build of etrt "
                         "refuses it at load (its allocator says that a CUDA build is needed). Say which runtime "
                         "with --runtime cpu|cuda")

    def check_misplaced(self, m: Any) -> None:
        """Tensors placed on a device whose memory is not planned there: ExecuTorch's legacy planning
        (``enable_non_cpu_memory_planning=False``) tags a ``target_device`` delegate's arguments with the device but
        plans them in host memory and inserts no host/device copies. ExecuTorch refuses a planned method input of
        that kind at the input copy; an argument placed so reaches the delegate as host memory tagged CUDA, which a
        host engine refuses and a CUDA-mode engine would read as device memory. No runtime runs it."""
        if not m.misplaced:
            return
        shown = "; ".join(f"v{vi} on {m.device_values[vi]}, {where}" for vi, where in sorted(m.misplaced.items()))
        self.add(ERROR, "device-tensor-in-host-memory",
                 f"method '{m.name}' places tensors on a device but their memory is not planned there ({shown}): the "
                 "program was exported with a target_device compile spec and ExecuTorch's legacy memory planning "
                 "(ExecutorchBackendConfig(enable_non_cpu_memory_planning=False)), which plans every tensor in host "
                 "memory and inserts no host/device copies. No runtime runs it: ExecuTorch refuses such a planned "
                 "method input when it is set ('Planned-buffer copy needs host memory on both sides'), a host engine "
                 "refuses such an argument at the call, and a CUDA-mode engine would read host memory as device "
                 "memory. Export with enable_non_cpu_memory_planning=True (ExecuTorch's default) or without the "
                 "target_device compile spec")

    def check_placed_arguments(self, d: DelegateInfo) -> None:
        """A host engine (the GPU-free NvInfer's host mode) behind arguments ExecuTorch placed on a device: the call
        refuses each before reading it, whatever the build. The rule and its words are the runtime's
        (``etrt_host_engine_binds``)."""
        from .. import _reader

        eng = d.gpufree_engine
        if eng is None or eng.cuda_mode or d.tensor_args is None:
            return
        refusals: List[str] = []
        for b in d.arguments() or []:
            arg = d.bound_value(b.name)
            device = arg.value.get("device", "cpu") if arg is not None else "cpu"
            if device == "cpu":
                continue
            refusal = _reader.host_engine_binds(device, b.is_input, b.name)
            if refusal is not None:
                refusals.append(refusal)
        if not refusals:
            return
        more = f" ({len(refusals) - 1} more argument(s) likewise)" if len(refusals) > 1 else ""
        self.add(ERROR, "host-engine-on-device",
                 f"{d.ref.label}: its engine is a host engine of the GPU-free NvInfer, but the program places its "
                 f"arguments on a device, so the runtime refuses the first call, in any build: {refusals[0]}{more}",
                 d)
