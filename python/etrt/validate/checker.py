"""The checker: runs the program-level, per-delegate, per-call and
cross-delegate checks (each group in its own module, mixed in here) and
collects their findings."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

from ..analysis import BACKEND_ID, DelegateInfo
from .call_checks import _CallChecks
from .cross_checks import _CrossChecks
from .delegate_checks import _DelegateChecks
from .placement_checks import _PlacementChecks
from .program_checks import _ProgramChecks
from .result import INFO, Finding


class _Checker(_ProgramChecks, _PlacementChecks, _DelegateChecks, _CallChecks, _CrossChecks):
    def __init__(self, delegates: List[DelegateInfo], plans: Optional[Sequence[Mapping[str, Any]]],
                 pte: Optional[Mapping[str, Any]] = None, runtime: str = "unknown") -> None:
        self.delegates = delegates
        self.runtime = runtime
        self.plans = plans
        self.pte = pte
        self.findings: List[Finding] = []

    def add(self, severity: str, code: str, message: str, *delegates: DelegateInfo) -> None:
        self.findings.append(Finding(severity, code, message, tuple(d.ref for d in delegates)))

    def run(self) -> List[Finding]:
        if self.pte is not None:
            self.check_constants(self.pte)
            self.check_device_placement(self.pte, self.runtime)
        trt = [d for d in self.delegates if d.is_tensorrt]
        if not trt:
            ids = sorted({d.ref.backend_id for d in self.delegates})
            self.add(INFO, "no-tensorrt-delegates",
                     f"the program has no {BACKEND_ID} delegates"
                     + (f" (backends: {', '.join(ids)})" if ids else " (no delegates at all)")
                     + "; there are no optimization profiles to check")
        for d in self.delegates:
            if not d.is_tensorrt:
                self.add(INFO, "foreign-backend",
                         f"{d.ref.label} is a {d.ref.backend_id} delegate, not TensorRT: profile requests do not "
                         "apply to it", d)
                continue
            self.check_one(d)
            self.check_placed_arguments(d)
        usable = [d for d in trt if d.readable and d.signature is not None and not self.inconsistent(d)]
        # A profile request applies to one execution of one method, so the
        # delegates of different methods need not agree with each other.
        for mi in sorted({d.ref.method_index for d in usable}):
            self.check_cross([d for d in usable if d.ref.method_index == mi])
        return self.findings

    def inconsistent(self, d: DelegateInfo) -> bool:
        return any(f.code in ("signature-inconsistent", "signature-engine-mismatch", "engine-mismatch")
                   and d.ref in f.delegates
                   for f in self.findings)
