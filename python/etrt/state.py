"""The export side of delegate-owned state (docs/design.md, decision 18).

When a partitioner hands a mutable buffer to the delegate that updates it
(ExecuTorch's ``tag_mutated_buffer``), ExecuTorch moves the buffer into the
lowered module: the delegate call passes neither the buffer nor its new value,
and the buffer's initial value means nothing to ExecuTorch. The delegate must
own the storage, and its blob must say which engine input and output are the
state -- the ``delegate_state`` metadata key (docs/blob-format.md).

:func:`delegate_states` reads that from the partition's ``ExportedProgram``
in a backend's ``preprocess``: every buffer the partition both reads
(``inputs_to_buffers``) and mutates (``buffers_to_mutate``) becomes one
:class:`etrt.blob.DelegateState`, named by the buffer's fully qualified name
(so a prefill and a decode method over one cache share it), with its initial
value as named data (``PreprocessResult.data_store_output``) unless it is all
zeros, which the runtime writes without any data. A partition whose buffers
stay with the program (the default: no ``tag_mutated_buffer``) has none.

Needs torch only through the objects it is given.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Tuple

from .blob import DelegateState

#: Prefix of the named-data keys the initial values are stored under.
KEY_PREFIX = "etrt_state/"


def _initial_bytes(tensor) -> bytes:
    return tensor.detach().cpu().contiguous().numpy().tobytes()


def delegate_states(exported_program, input_names: Mapping[str, str], output_names: Mapping[str, str],
                    key_prefix: str = KEY_PREFIX) -> Tuple[List[DelegateState], Dict[str, bytes]]:
    """The ``delegate_state`` entries of a partition and the named data holding their initial values.

    ``input_names``: placeholder node name -> the engine input it became; ``output_names``: output node name -> the
    engine output it became. Raises ValueError for a mutated buffer the engine does not read or write (the translation
    dropped it), which the runtime could not bind."""
    sig = exported_program.graph_signature
    placeholder_of = {buffer: node for node, buffer in sig.inputs_to_buffers.items()}
    states: List[DelegateState] = []
    data: Dict[str, bytes] = {}
    for output_node, buffer in sig.buffers_to_mutate.items():
        node = placeholder_of.get(buffer)
        if node is None or node not in input_names or output_node not in output_names:
            raise ValueError(f"mutable buffer {buffer!r} of the partition is not both an engine input and an engine "
                             "output; a delegate-owned state needs both")
        value = exported_program.state_dict.get(buffer)
        if value is None:
            value = exported_program.constants.get(buffer)
        key = ""
        if value is not None and bool(value.count_nonzero() != 0):
            key = key_prefix + buffer
            data[key] = _initial_bytes(value)
        states.append(DelegateState(name=buffer, input=input_names[node], output=output_names[output_node],
                                    initial_value=key))
    return states, data
