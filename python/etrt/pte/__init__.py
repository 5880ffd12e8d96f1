"""Write and read ExecuTorch ``.pte`` programs without PyTorch.

The writer builds a Program as JSON that follows ExecuTorch's own flatbuffer
schema (``program.fbs`` + ``scalar_type.fbs``, shipped in the executorch
wheel) and lets the wheel's ``flatc`` turn it into the binary. Delegate blobs
are stored either in segments after the flatbuffer (default, like EXIR's
``extract_delegate_segments=True``) or inline in
``Program.backend_delegate_data``.

The reader checks the file header, the optional extended header (``eh00``)
and every offset of the flatbuffer against the schema before it lets ``flatc``
decode it to JSON, so a truncated or foreign file gives a :class:`PteError`
instead of a crashed ``flatc``.

Only the standard library is used. See docs/pte-packer.md. Modules:

* :mod:`etrt.pte.toolchain` -- finding flatc and the schema, running flatc;
* :mod:`etrt.pte.schema` -- reading the .fbs schema;
* :mod:`etrt.pte.verify` -- checking headers and every flatbuffer offset;
* :mod:`etrt.pte.reader` -- :func:`read_pte`, :func:`describe_value`;
* :mod:`etrt.pte.builder` -- :class:`Program`, :class:`Method`, :func:`write_atomic`;
* :mod:`etrt.pte.spec` -- the JSON spec front door (:func:`program_from_spec`);
* :mod:`etrt.pte.command` -- ``python -m etrt.pte``;
* :mod:`etrt.pte.format` -- facts about the format, :class:`PteError`.

Usage::

    from etrt.pte import Program, read_pte

    prog = Program()
    m = prog.method("forward", inputs=["x"], outputs=["y"])
    m.tensor("x", "float32", [1, 8], dynamic=True)
    m.tensor("y", "float32", [1, 8], dynamic=True)
    m.delegate_call("MyBackend", blob, args=["x", "y"], compile_specs={"k": b"v"})
    prog.write("model.pte")

    info = read_pte("model.pte")

Command line (the build-time front door, see :func:`main`)::

    python -m etrt.pte --spec spec.json --out model.pte [--depfile model.pte.d]
    python -m etrt.pte --dump model.pte
"""

from ..dtypes import DTYPES
from .builder import DELEGATE_STORAGES, Method, Program, write_atomic
from .command import main
from .format import (EXTENDED_HEADER_LENGTH, EXTENDED_HEADER_MAGIC, EXTENDED_HEADER_MIN_LENGTH,
                     EXTENDED_HEADER_OFFSET, FILE_IDENTIFIER, INLINE_DELEGATE_ALIGNMENT, MAX_RANK,
                     PLANNED_MEMORY_ID, PLANNED_TENSOR_ALIGNMENT, SCHEMA_VERSION, SEGMENT_ALIGNMENT, PteError)
from .reader import describe_value, read_pte
from .spec import compile_specs, load_spec, program_from_spec
from .toolchain import Toolchain, ToolchainError, find_toolchain
from .verify import verify_pte_bytes

__all__ = [
    "DELEGATE_STORAGES",
    "DTYPES",
    "EXTENDED_HEADER_LENGTH",
    "EXTENDED_HEADER_MAGIC",
    "EXTENDED_HEADER_MIN_LENGTH",
    "EXTENDED_HEADER_OFFSET",
    "FILE_IDENTIFIER",
    "INLINE_DELEGATE_ALIGNMENT",
    "MAX_RANK",
    "Method",
    "PLANNED_MEMORY_ID",
    "PLANNED_TENSOR_ALIGNMENT",
    "PteError",
    "Program",
    "SCHEMA_VERSION",
    "SEGMENT_ALIGNMENT",
    "Toolchain",
    "ToolchainError",
    "compile_specs",
    "describe_value",
    "find_toolchain",
    "load_spec",
    "main",
    "program_from_spec",
    "read_pte",
    "verify_pte_bytes",
    "write_atomic",
]
