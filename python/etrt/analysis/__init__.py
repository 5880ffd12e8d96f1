"""What a program's delegates are, decoded as far as they can be: the model
that :mod:`etrt.validate` checks and :mod:`etrt.inspect_pte` reports.

:func:`load_program` reads a source (a ``.pte`` path or bytes, an object with
a ``.buffer``, a :func:`etrt.pte.read_pte` dict); :func:`analyze_pte` decodes
every delegate of it (:class:`DelegateInfo`: where it sits, its blob header
and metadata, signature, GPU-free NvInfer engine, and the tensors each call passes);
:func:`lowered_modules` and :func:`decode_blob` do the same for lowered
delegates before serialization. :func:`describe_aliases` resolves a
delegate's in-place aliases as the runtime does at load.

Modules:

* :mod:`etrt.analysis.delegates` -- :class:`DelegateInfo` and where a delegate sits;
* :mod:`etrt.analysis.program` -- loading a program, decoding its delegates;
* :mod:`etrt.analysis.aliases` -- :func:`describe_aliases`;
* :mod:`etrt.analysis.states` -- :func:`describe_states`;
* :mod:`etrt.analysis.placement` -- :func:`program_placement`: device-placed tensors, buffers and copies;
* :mod:`etrt.analysis.text` -- :func:`printable`, :func:`parse_byte_count`.
"""

from .aliases import AliasView, describe_aliases
from .delegates import BACKEND_ID, DelegateCall, DelegateInfo, DelegateRef, TensorArg
from .placement import COPY_OPS, MethodPlacement, device_of, program_placement
from .states import describe_states
from .program import analyze_pte, decode_blob, load_program, lowered_modules, tensor_args
from .text import MAX_BYTE_COUNT, WEIGHT_STREAMING_BUDGET, parse_byte_count, printable

__all__ = [
    "AliasView",
    "BACKEND_ID",
    "COPY_OPS",
    "DelegateCall",
    "DelegateInfo",
    "DelegateRef",
    "MAX_BYTE_COUNT",
    "MethodPlacement",
    "TensorArg",
    "WEIGHT_STREAMING_BUDGET",
    "analyze_pte",
    "decode_blob",
    "describe_aliases",
    "device_of",
    "load_program",
    "lowered_modules",
    "parse_byte_count",
    "printable",
    "program_placement",
    "tensor_args",
]
