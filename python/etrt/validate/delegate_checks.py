"""Per-delegate checks: the blob, its signature, its aliases, its compile
specs, and the blob against a GPU-free NvInfer engine."""

from __future__ import annotations

from typing import Dict

from ..analysis import MAX_BYTE_COUNT, WEIGHT_STREAMING_BUDGET, DelegateInfo, describe_aliases, parse_byte_count
from ..analysis.aliases import ALIAS_RULES
from .result import ERROR, INFO, WARNING


def _show_bytes(value: bytes) -> str:
    if not value:
        return "empty"
    text = "".join(chr(c) if 0x20 <= c < 0x7F and c not in (0x27, 0x5C) else f"\\x{c:02x}" for c in value[:64])
    return f"'{text}'" + (f"... ({len(value)} bytes)" if len(value) > 64 else "")


class _DelegateChecks:
    """The checks of each TensorRT delegate (:meth:`check_one`); mixed into
    :class:`etrt.validate.checker._Checker`, whose ``add`` records a finding."""

    def check_one(self, d: DelegateInfo) -> None:
        label = d.ref.label
        if self.plans is not None and not d.calls:
            self.add(INFO, "never-called", f"{label} is never called by its method's instructions", d)
        if d.blob_error is not None:
            self.add(ERROR, "corrupt-blob", f"{label}: {d.blob_error}", d)
            return
        if d.engine_error is not None:
            self.add(ERROR, "corrupt-engine", f"{label}: {d.engine_error}; re-export the model", d)
            return
        if d.signature_error is not None:
            self.add(ERROR, "signature-inconsistent",
                     f"{label}: its profile_signature is not usable: {d.signature_error}; re-export the model", d)
        sig = d.blob_signature
        if sig is not None:
            for problem in sig.problems():
                self.add(ERROR, "signature-inconsistent",
                         f"{label}: its profile_signature contradicts itself: {problem}; regenerate the signature "
                         "from the engine's profiles (etrt.signature.Signature.from_torch_trt derives symbol ranges "
                         "from the bounds)", d)
            described = set(sig.input_names)
            missing = [b.name for b in d.input_bindings() if b.name not in described]
            if missing:
                self.add(WARNING, "signature-partial",
                         f"{label}: its profile_signature does not describe input(s) "
                         f"{', '.join(repr(n) for n in missing)}; their bounds are not checked. Describe every "
                         "engine input in the signature", d)
        self.check_aliases(d)
        self.check_compile_specs(d)
        self.check_machine(d)
        if d.gpufree_engine is not None:
            self.check_engine(d)
        elif sig is None:
            dyn = [b.name for b in d.input_bindings() if -1 in b.shape]
            hint = (f" Its io_bindings mark dynamic dims on {', '.join(repr(n) for n in dyn)}; if the engine has "
                    "one profile, pins N > 0 will fail on it at run time." if dyn else "")
            self.add(INFO, "unverifiable",
                     f"{label} carries no profile_signature and its engine is an opaque TensorRT plan, so its "
                     f"profiles cannot be checked at export time.{hint} Re-export it with a signature "
                     "(etrt.signature, or 'profiles' in the IO description of 'etrt pack')", d)
        if d.tensor_args is not None or d.calls:
            self.check_calls(d)

    def check_machine(self, d: DelegateInfo) -> None:
        """What the engine needs of the build and the machine that validates it: a CUDA build for a CUDA-mode
        GPU-free NvInfer engine or a TensorRT plan -- an error for a program declared for a CPU build of etrt
        (``runtime="cpu"``), which refuses it at load; a warning when this build lacks CUDA and the runtime is not
        said; nothing for a program declared for a CUDA runtime -- and a device with room for its scratch."""
        from .. import _reader

        eng, label = d.gpufree_engine, d.ref.label
        # runtime="cuda": the program is declared for a CUDA build of etrt, so what this build cannot load is moot;
        # runtime="cpu": it is declared for a build without CUDA, whatever this one is.
        if self.runtime == "cpu":
            severity, build = ERROR, "the runtime named (--runtime cpu) is an etrt built without CUDA"
        else:
            severity, build = WARNING, "this etrt was built without CUDA"
        here = self.runtime == "cpu" or (self.runtime != "cuda" and not _reader.build_has_cuda())
        if eng is not None and eng.cuda_mode and here:
            self.add(severity, "needs-cuda-build",
                     f"{label}: its engine is a CUDA-mode engine of the GPU-free NvInfer (its tensors and weights "
                     f"live in device memory), and {build}, so loading it there "
                     "fails; run it with an etrt built with -DETRT_WITH_CUDA=ON (pip: ETRT_CMAKE_ARGS="
                     "\"-DETRT_WITH_CUDA=ON\") on a machine with a GPU", d)
        elif d.engine_kind == "tensorrt" and here:
            self.add(severity, "needs-cuda-build",
                     f"{label}: its engine is a TensorRT plan (not an engine of the GPU-free NvInfer), and {build}, "
                     "against the GPU-free NvInfer, which refuses TensorRT plans at load; run "
                     "it with an etrt built against NVIDIA's TensorRT with -DETRT_WITH_CUDA=ON (pip: "
                     "ETRT_CMAKE_ARGS=\"-DETRT_WITH_CUDA=ON -DTENSORRT_ROOT=/path/to/TensorRT\") on a machine with a GPU", d)
        if eng is None or not eng.cuda_mode or d.metadata is None:
            return
        device = d.metadata.device_id
        total = _reader.device_memory(device)
        if total is not None and eng.device_memory_size > total:
            self.add(WARNING, "scratch-exceeds-device",
                     f"{label}: its engine needs {eng.device_memory_size} bytes of scratch memory per execution "
                     f"context, more than the {total} bytes CUDA device {device} has in all, so creating its "
                     "context fails there; run it on a larger device, or rebuild the engine with smaller profiles", d)

    def check_aliases(self, d: DelegateInfo) -> None:
        """aliased_io as the runtime resolves it at load (see :func:`describe_aliases`)."""
        for v in describe_aliases(d):
            if v.status == "refused":
                self.add(ERROR, v.code or "alias-refused",
                         f"{d.ref.label}: the runtime refuses this delegate at load (InvalidProgram): {v.problem}", d)

    def check_compile_specs(self, d: DelegateInfo) -> None:
        """The compile specs the runtime reads: weight_streaming_budget, at most once, a byte count."""
        specs = d.compile_spec_list if d.compile_spec_list is not None else list(d.compile_specs.items())
        budgets = [v for k, v in specs if k == WEIGHT_STREAMING_BUDGET]
        if len(budgets) > 1:
            self.add(ERROR, "bad-compile-spec",
                     f"{d.ref.label}: the '{WEIGHT_STREAMING_BUDGET}' compile spec appears {len(budgets)} times ("
                     + ", ".join(_show_bytes(v) for v in budgets) + "); the runtime refuses a delegate with more "
                     "than one (InvalidProgram). Re-export with one budget", d)
            return
        if not budgets:
            return
        value = budgets[0]
        n = parse_byte_count(value)
        if n is None:
            self.add(ERROR, "bad-compile-spec",
                     f"{d.ref.label}: compile spec '{WEIGHT_STREAMING_BUDGET}' is {_show_bytes(value)}, not a byte "
                     "count; the runtime refuses the delegate at load (InvalidProgram). The value must be one or "
                     f"more ASCII decimal digits (no sign, space, NUL or decimal point), at most {MAX_BYTE_COUNT} "
                     "bytes: re-export with a valid budget, e.g. '1073741824' for 1 GiB", d)
        elif d.gpufree_engine is not None and not d.gpufree_engine.streamable_weights:
            self.add(INFO, "weight-streaming-ignored",
                     f"{d.ref.label}: its weight_streaming_budget of {n} bytes is ignored at load: the engine has no "
                     "streamable weights (it was not built with weight streaming), so all its weights stay on the "
                     "device", d)

    def check_engine(self, d: DelegateInfo) -> None:
        """A GPU-free NvInfer engine can be read here: the runtime's own resolution of the blob against it
        (``etrt_delegate_resolve``: the bindings, the profile signature, the delegate-owned states; the aliases are
        :meth:`check_aliases`'), and the outputs whose shape the engine cannot infer before running."""
        label, eng, r = d.ref.label, d.gpufree_engine, d.resolution
        assert eng is not None
        refusal = r["refusal"] if r is not None else None
        if refusal is not None and refusal["rule"] not in ALIAS_RULES:
            rule, message = refusal["rule"], refusal["message"]
            if rule == "signature":
                self.add(ERROR, "signature-engine-mismatch",
                         f"{label}: its profile_signature disagrees with the engine's own profiles, so the runtime "
                         f"refuses it at load: {message}. Regenerate the signature from the engine that is packed", d)
            elif rule == "state":
                self.add(ERROR, "state-refused",
                         f"{label}: the runtime refuses its delegate_state at load: {message}", d)
            else:
                self.add(ERROR, "engine-mismatch",
                         f"{label}: the blob and its GPU-free NvInfer engine do not belong together, so the runtime "
                         f"refuses it at load: {message}", d)
        dependent = [t.name for t in eng.io if not t.is_input and t.data_dependent]
        if dependent:
            self.add(ERROR, "engine-mismatch",
                     f"{label}: output(s) {', '.join(repr(n) for n in dependent)} have a data-dependent shape, which "
                     "etrt cannot size before running; the runtime refuses the engine at load. Rebuild it with "
                     "outputs whose shapes follow from the input shapes", d)
