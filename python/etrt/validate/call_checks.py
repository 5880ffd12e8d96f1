"""Per-call checks: the tensors a delegate call passes against the blob's
bindings (count, dtype), the profiles' bounds against the planned input
bounds, and what a GPU-free NvInfer engine's profiles produce against the planned
outputs."""

from __future__ import annotations

import math
from typing import List, Optional, Tuple

from .. import blob as _blob
from .. import dtypes
from ..analysis import DelegateInfo, TensorArg, tensor_args
from ..signature import format_shape
from .result import ERROR, INFO, WARNING


class _CallChecks:
    """The checks of each call of a delegate; mixed into
    :class:`etrt.validate.checker._Checker`, whose ``add`` records a finding."""

    def check_calls(self, d: DelegateInfo) -> None:
        label, md = d.ref.label, d.metadata
        assert md is not None and self.plans is not None
        plan = self.plans[d.ref.method_index]
        n_values = len(plan.get("values") or [])
        for call in d.calls:
            bad = [vi for vi in call.args if not 0 <= vi < n_values]
            if bad:
                self.add(ERROR, "corrupt-program",
                         f"{label}: the call at instruction {call.instruction} passes value {bad[0]}, but the "
                         f"method has {n_values} values; the .pte is corrupt, re-export the model", d)
                return
        bindings = d.arguments()
        if bindings is None:
            self.add(INFO, "bindings-from-engine",
                     f"{label}: its blob lists no io_bindings, so the runtime takes the IO tensors from the engine, "
                     "an opaque TensorRT plan here: the call's arguments cannot be checked against them", d)
            return
        n_in = sum(1 for b in bindings if b.is_input)
        owned = d.state_bindings()
        aliased = set(d.aliased_outputs()) - owned
        n_aliased = sum(1 for b in bindings if not b.is_input and b.name in aliased)
        n_owned = sum(1 for b in bindings if b.name in owned)
        source = "the blob's io_bindings list" if md.io_bindings else "the engine has"
        for call in d.calls:
            args = tensor_args(plan, call) or []
            where = label if call is d.calls[0] else f"{label} (call at instruction {call.instruction})"
            pairs = d.match_args(args)
            if pairs is None:
                counts = f"{source} {n_in} input(s) and {len(bindings) - n_in} output(s)"
                if n_owned:
                    counts += f", {n_owned} of them the delegate's own state (delegate_state), never passed"
                if n_aliased:
                    counts += (f", {n_aliased} of them written in place into inputs: a call passes "
                               f"{len(bindings) - n_owned} tensors, or {len(bindings) - n_owned - n_aliased} without "
                               "those outputs")
                self.add(ERROR, "arg-count-mismatch",
                         f"{where}: the call passes {len(args)} tensor(s), but {counts}; the runtime refuses the "
                         "call. The .pte and its engine do not match: re-export the model", d)
                continue
            for b, arg in pairs:
                if arg is None:
                    continue
                want = dtypes.normalize(b.dtype) if b.dtype else None
                have = arg.value.get("dtype")
                if want and have and want != have:
                    self.add(ERROR, "dtype-mismatch",
                             f"{where}: {'input' if b.is_input else 'output'} '{b.name}' is {b.dtype} in the "
                             f"{'engine' if d.bound_by_runtime else 'blob'}, "
                             f"but the program passes value {arg.value_index} of dtype {have}; the runtime refuses "
                             "the call. Make the program tensor and the engine binding the same dtype", d)
            self.check_bounds(d, where, pairs)
            self.check_outputs(d, where, pairs)

    def check_bounds(self, d: DelegateInfo, where: str,
                     pairs: List[Tuple[_blob.IoBinding, Optional[TensorArg]]]) -> None:
        """Every profile's max inside the planned upper bound of the tensor it binds."""
        sig = d.signature
        if sig is None:
            return
        bound = {b.name: a for b, a in pairs if b.is_input and a is not None}
        for inp in sig.inputs:
            arg = bound.get(inp.name)
            if arg is None:
                continue
            sizes = arg.value["sizes"]
            dyn = arg.value["dynamism"]
            what = f"input '{inp.name}' (value {arg.value_index}, planned upper bound {format_shape(sizes)}"
            what += ", static)" if dyn == "STATIC" else ")"
            if len(sizes) == inp.rank:
                over = [(p, k, b.max[k], sizes[k]) for p, b in enumerate(inp.profiles)
                        for k in range(inp.rank) if b.max[k] > sizes[k]]
                if over:
                    detail = "; ".join(f"profile {p} dim {k} max {mx} > {ub}" for p, k, mx, ub in over)
                    worst = {}
                    for p, k, mx, ub in over:
                        worst[k] = max(worst.get(k, 0), mx)
                    fix = ", ".join(f"dim {k} to at least {mx}" for k, mx in sorted(worst.items()))
                    self.add(ERROR, "exceeds-planned-bounds",
                             f"{where}: {what}: {detail}. A profile may not admit shapes larger than the buffer "
                             f"ExecuTorch planned; lower those profiles' max, or re-export with a larger upper bound "
                             f"for {fix} (e.g. torch.export Dim max) so memory planning covers every profile", d)
                if dyn == "STATIC":
                    unreachable = [p for p, b in enumerate(inp.profiles) if not b.contains(sizes)]
                    if unreachable:
                        self.add(WARNING, "static-input-unreachable",
                                 f"{where}: {what} is static in the program but profile(s) "
                                 f"{', '.join(map(str, unreachable))} do not admit {format_shape(sizes)}; "
                                 "pinning those profiles always fails. Mark the tensor dynamic, or fix the profiles",
                                 d)
            else:
                cap = math.prod(sizes)
                over = [(p, math.prod(b.max)) for p, b in enumerate(inp.profiles) if math.prod(b.max) > cap]
                if over:
                    detail = "; ".join(f"profile {p} max {format_shape(inp.profiles[p].max)} = {n} elements"
                                       for p, n in over)
                    self.add(ERROR, "exceeds-planned-bounds",
                             f"{where}: {what}: {detail}, more than the {cap} elements planned. Lower those "
                             "profiles' max or re-export with a larger upper bound", d)
                self.add(WARNING, "rank-differs",
                         f"{where}: {what} has rank {len(sizes)} in the program but rank {inp.rank} in the "
                         "signature; only element counts were compared. Make the engine input and the program "
                         "tensor the same rank", d)

    def check_outputs(self, d: DelegateInfo, where: str,
                      pairs: List[Tuple[_blob.IoBinding, Optional[TensorArg]]]) -> None:
        """What each profile can make each output, against the capacity ExecuTorch planned for it.

        Only a GPU-free NvInfer engine can be evaluated here: its shape inference
        (every op kind, 1 to 8) gives each output's shape at every profile's
        min and max input shapes; outputs only grow with their inputs, so the
        max is the largest. An opaque TensorRT plan cannot be evaluated, and
        the finding says so (the runtime then refuses an oversized output at
        execute)."""
        eng = d.gpufree_engine
        outputs = [(b, arg) for b, arg in pairs if not b.is_input and arg is not None]
        if eng is None:
            if outputs and d.engine_kind == "tensorrt":
                self.add(INFO, "output-capacity-unchecked",
                         f"{where}: its engine is an opaque TensorRT plan, so the output shapes its profiles produce "
                         "cannot be computed here and the planned capacity of its outputs was not checked; the "
                         "runtime refuses an execution whose output exceeds its planned buffer (InvalidArgument)", d)
            return
        if not outputs:
            return
        produced = [(eng.output_shapes(p, "min"), eng.output_shapes(p, "max")) for p in range(eng.num_profiles)]
        for b, arg in outputs:
            t = eng.tensor(b.name)
            if t is None or t.is_input or t.data_dependent:
                continue  # engine-mismatch already says why
            sizes = tuple(arg.value["sizes"])
            dyn = arg.value["dynamism"]
            if dyn == "DYNAMIC_UNBOUND":
                continue  # no upper bound: ExecuTorch grows the buffer
            what = (f"output '{b.name}' (value {arg.value_index}, planned upper bound {format_shape(sizes)}"
                    + (", static)" if dyn == "STATIC" else ")"))
            over, ranks, static = [], [], []
            for p, (low, high) in enumerate(produced):
                lo, hi = low[b.name], high[b.name]
                if not sizes and hi == (1,):
                    continue  # the runtime fills a 0-d tensor from a [1] output
                if len(hi) != len(sizes):
                    ranks.append((p, hi))
                    continue
                dims = [(k, hi[k], sizes[k]) for k in range(len(hi)) if hi[k] > sizes[k]]
                if dims:
                    over.append((p, hi, dims))
                elif dyn == "STATIC" and (lo != sizes or hi != sizes):
                    static.append((p, lo, hi))
            if ranks:
                detail = "; ".join(f"profile {p} produces {format_shape(hi)}" for p, hi in ranks)
                self.add(ERROR, "output-rank-mismatch",
                         f"{where}: {what}: {detail}, of another rank; the runtime cannot resize the program tensor "
                         "to it and refuses those executions (InvalidArgument). Make the program tensor the engine "
                         "output's rank", d)
            if over:
                detail = "; ".join(f"profile {p} produces up to {format_shape(hi)} ("
                                   + ", ".join(f"dim {k}: {h} > {u}" for k, h, u in dims) + ")" for p, hi, dims in over)
                need = [max([sizes[k]] + [hi[k] for _, hi, _ in over]) for k in range(len(sizes))]
                self.add(ERROR, "exceeds-planned-output",
                         f"{where}: {what}: {detail}. The runtime refuses every execution whose output exceeds its "
                         f"planned buffer (InvalidArgument); re-export with an upper bound of at least "
                         f"{format_shape(need)} for this output (e.g. a larger torch.export Dim max), or lower those "
                         "profiles' max", d)
            if static:
                detail = "; ".join(f"profile {p} produces {format_shape(lo)}"
                                   + ("" if lo == hi else f" to {format_shape(hi)}") for p, lo, hi in static)
                self.add(WARNING, "static-output-mismatch",
                         f"{where}: {what} is static in the program, but {detail}; ExecuTorch cannot resize a static "
                         "tensor, so the executions that produce another shape fail. Mark the tensor dynamic, or fix "
                         "the profiles", d)
