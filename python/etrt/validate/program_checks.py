"""Program-level checks: where constants live, as ExecuTorch 1.5.1's
runtime requires (``runtime-refuses-program``)."""

from __future__ import annotations

from typing import Any, Mapping

from .result import ERROR


class _ProgramChecks:
    """The program's own checks; mixed into
    :class:`etrt.validate.checker._Checker`, whose ``add`` records a finding."""

    def check_constants(self, pte: Mapping[str, Any]) -> None:
        """Where constants live, as ExecuTorch 1.5.1's runtime requires at Program::load and when a method loads.

        ExecuTorch's CMake builds (the 1.5.1 wheel's runtime among them) compile
        out the deprecated in-flatbuffer ``constant_buffer`` path: a program
        must carry a ``constant_segment`` with at least its placeholder offset,
        may not also use ``constant_buffer`` when it has constants, and its
        constant tensors must point into the segment."""
        program = pte.get("program") or {}
        refused = "ExecuTorch 1.5.1's runtime refuses the program at Program::load (InvalidProgram)"
        cbuf = program.get("constant_buffer") or []
        cseg = program.get("constant_segment")
        offsets = list((cseg or {}).get("offsets") or [])
        entries = f"{len(cbuf)} entr{'y' if len(cbuf) == 1 else 'ies'}"
        if not offsets:
            what = "no constant_segment" if cseg is None else "a constant_segment without offsets"
            self.add(ERROR, "runtime-refuses-program",
                     f"the program has {what} (its deprecated constant_buffer has {entries}), so it relies on the "
                     "constant_buffer path, which ExecuTorch's CMake builds (the 1.5.1 wheel's runtime among them) "
                     f"compile out: {refused}. Re-export the model with ExecuTorch 0.7 or later, which stores "
                     "constants in constant_segment")
            return
        segment_size = None
        if len(offsets) > 1:
            if cbuf:
                self.add(ERROR, "runtime-refuses-program",
                         f"the program stores constants both in the deprecated constant_buffer ({entries}) and in "
                         f"constant_segment ({len(offsets)} offsets); only one may be used, so {refused}. "
                         "Re-export the model")
                return
            segments = program.get("segments") or []
            index = cseg.get("segment_index", 0)
            if index >= len(segments):
                self.add(ERROR, "runtime-refuses-program",
                         f"constant_segment.segment_index {index} is not one of the program's {len(segments)} "
                         f"segment(s); {refused}. The .pte is corrupt: re-export the model")
                return
            seg = segments[index]
            base = (pte.get("extended_header") or {}).get("segment_base_offset", 0)
            end = base + seg.get("offset", 0) + seg.get("size", 0)
            size = pte.get("file_size")
            if size is not None and end > size:
                self.add(ERROR, "runtime-refuses-program",
                         f"the constant segment (segment {index}) ends at byte {end}, past the end of the {size}-byte "
                         f"file; {refused}. The .pte is truncated: re-export the model")
                return
            segment_size = seg.get("size", 0)
        from ..pte import describe_value

        for plan in program.get("execution_plan") or []:
            bad = []
            for vi, value in enumerate(plan.get("values") or []):
                t = (value.get("val") or {}) if value.get("val_type") == "Tensor" else {}
                index = t.get("data_buffer_idx", 0)
                if index <= 0 or t.get("allocation_info") is not None:
                    continue
                if (t.get("extra_tensor_info") or {}).get("location") == "EXTERNAL":
                    continue  # named data, resolved elsewhere
                if len(offsets) == 1:
                    bad.append(f"value {vi} is a constant (data_buffer_idx {index}) but constant_segment holds no "
                               "constants (only the placeholder offset), so the runtime looks for it in the "
                               "deprecated constant_buffer, which its CMake builds compile out")
                elif index >= len(offsets):
                    bad.append(f"value {vi} is constant {index}, but constant_segment.offsets has {len(offsets)} "
                               "entries")
                else:
                    nbytes = describe_value(value).get("nbytes")
                    if nbytes is not None and segment_size is not None and offsets[index] + nbytes > segment_size:
                        bad.append(f"value {vi} is constant {index}: {nbytes} bytes at offset {offsets[index]} run "
                                   f"past the {segment_size}-byte constant segment")
            if bad:
                more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
                self.add(ERROR, "runtime-refuses-program",
                         f"method '{plan.get('name')}': {bad[0]}{more}; ExecuTorch 1.5.1's runtime refuses the "
                         "method when it loads (InvalidProgram). Re-export the model")
