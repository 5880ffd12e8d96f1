"""What validation returns: :class:`Finding` (severity, code, message, the
delegates involved), :class:`ValidationResult` and its report, and
:class:`ValidationError`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..analysis import DelegateInfo, DelegateRef, printable

#: Finding codes that mean "the input is damaged", not "the model is wrong".
BAD_INPUT_CODES = frozenset({"corrupt-blob", "corrupt-engine", "corrupt-program"})

ERROR, WARNING, INFO = "error", "warning", "info"


class ValidationError(ValueError):
    """Raised by :func:`check_program` when a program has validation errors;
    ``.result`` holds the full :class:`ValidationResult`."""

    def __init__(self, result: "ValidationResult") -> None:
        self.result = result
        lines = [f"{len(result.errors)} TensorRT profile validation error(s):"]
        lines += [f"  - {f.message}" for f in result.errors]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning" | "info"
    code: str
    message: str
    delegates: Tuple[DelegateRef, ...] = ()

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"

    def to_dict(self) -> Dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "message": self.message,
                "delegates": [d.to_dict() for d in self.delegates]}


@dataclass
class ValidationResult:
    """Findings plus the decoded delegates (for :mod:`etrt.inspect_pte`)."""

    source: Optional[str]
    delegates: List[DelegateInfo]
    findings: List[Finding]
    pte: Optional[Dict[str, Any]] = field(default=None, repr=False)

    @property
    def errors(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def infos(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == INFO]

    @property
    def ok(self) -> bool:
        """No errors (warnings and infos do not count)."""
        return not self.errors

    @property
    def bad_input(self) -> List[Finding]:
        """Errors that mean a damaged file rather than a wrong model."""
        return [f for f in self.errors if f.code in BAD_INPUT_CODES]

    @property
    def tensorrt_delegates(self) -> List[DelegateInfo]:
        return [d for d in self.delegates if d.is_tensorrt]

    def verdict(self) -> str:
        """``OK`` / ``FAILED`` with counts, one line."""
        n = len(self.tensorrt_delegates)
        counts = f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)"
        word = "OK" if self.ok else "FAILED"
        return f"{word}: {n} TensorRT delegate(s), {counts}"

    def sorted_findings(self, infos: bool = True) -> List[Finding]:
        """Errors, then warnings, then (optionally) infos; each in discovery order."""
        order = (ERROR, WARNING, INFO) if infos else (ERROR, WARNING)
        return [f for sev in order for f in self.findings if f.severity == sev]

    def format(self, infos: bool = True) -> str:
        """The verdict line, then one indented line per finding (control
        characters a name brought into a message escaped, so each finding is
        one line and none reaches a terminal raw)."""
        return "\n".join([self.verdict()] + [f"  {printable(str(f))}" for f in self.sorted_findings(infos)])

    def raise_if_errors(self) -> "ValidationResult":
        if self.errors:
            raise ValidationError(self)
        return self

    def to_dict(self) -> Dict[str, Any]:
        return {"ok": self.ok, "verdict": self.verdict(),
                "errors": [f.to_dict() for f in self.errors],
                "warnings": [f.to_dict() for f in self.warnings],
                "infos": [f.to_dict() for f in self.infos]}
