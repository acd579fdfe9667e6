"""What an engine keeps of a QDP plugin built ahead of time: :class:`AOTArtifact` (a JSON header
and the kernel's PTX or CUBIN bytes).

At build time TensorRT calls the plugin's ``get_launch_params`` (its ``aot_impl``) and
``get_kernel``; the engine then holds the kernel name, the compiled kernel, the grid, block and
shared memory as symbolic expressions of the input shapes, the extra ``int32`` arguments as
expressions too, and the output shapes (``get_output_shapes``' expressions). At run time nothing
of Python is left: TensorRT evaluates the expressions for the concrete shapes and launches the
kernel with the input pointers, then the extra arguments, then the output pointers (``aot_impl``'s
docstring, ``plugin/_lib.py:547``; protocol §8.4). This module stores exactly that and evaluates
it with no import of ``tensorrt``, the emulator or the plugin's module (only
:mod:`pyplugins.errors`), so that the launcher
(:mod:`pyplugins.checker.aot_launch`) can prove an AOT plugin runs without its Python.

Expressions are plain data (:func:`pyplugins.emulator.dims.expr_tree`): ``{"const": v}``,
``{"input": i, "dim": d}``, ``{"op": NAME, "a": ..., "b": ...}``, ``{"size": k, "opt": ...,
"upper": ...}``.

Example:
    >>> tree = {"op": "CEIL_DIV", "a": {"input": 0, "dim": 0}, "b": {"const": 256}}
    >>> evaluate(tree, {0: (1000,)})
    4
    >>> art = AOTArtifact("k", b".entry k()", "ptx", {"grid_x": tree}, [], [[{"input": 0, "dim": 0}]],
    ...                   ["FLOAT"], ["FLOAT"], ["LINEAR", "LINEAR"], 0)
    >>> AOTArtifact.from_bytes(art.to_bytes()) == art, art.launch_plan({0: (1000,)})["grid"]
    (True, (4, 1, 1))
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pyplugins.errors import AOTArtifactError

__all__ = ["AOTArtifact", "LAUNCH_FIELDS", "evaluate"]

#: The launch parameters, in ``KernelLaunchParams`` order.
LAUNCH_FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")
#: What an unset launch parameter means (QDP's ``KernelLaunchParams`` defaults).
_DEFAULTS = {"grid_x": 1, "grid_y": 1, "grid_z": 1, "block_x": 1, "block_y": 1, "block_z": 1,
             "shared_mem": 0}
_MAGIC = b"PPAOT1\0\0"
FORMAT_VERSION = 1


def evaluate(tree: Mapping[str, Any], shapes: Mapping[Any, Sequence[int]]) -> int:
    """The value of an expression tree for concrete input shapes (``shapes[i]`` is input ``i``'s
    shape; ``shapes[("size", k)]``, when present, output ``k``'s size-tensor value, else its
    upper bound is used, as TensorRT allocates).

    Raises:
        AOTArtifactError: an unknown node or operation, or a division by zero.
    """
    if "const" in tree:
        return int(tree["const"])
    if "input" in tree:
        return int(shapes[int(tree["input"])][int(tree["dim"])])
    if "size" in tree:
        key = ("size", int(tree["size"]))
        return int(shapes[key]) if key in shapes else evaluate(tree["upper"], shapes)
    if "op" in tree:
        a, b = evaluate(tree["a"], shapes), evaluate(tree["b"], shapes)
        op = tree["op"]
        if op in ("FLOOR_DIV", "CEIL_DIV") and b == 0:
            msg = f"expression {op}({a}, {b}) divides by zero"
            raise AOTArtifactError(msg)
        ops = {"SUM": lambda: a + b, "PROD": lambda: a * b, "MAX": lambda: max(a, b),
               "MIN": lambda: min(a, b), "SUB": lambda: a - b, "EQUAL": lambda: int(a == b),
               "LESS": lambda: int(a < b), "FLOOR_DIV": lambda: a // b,
               "CEIL_DIV": lambda: -((-a) // b)}
        if op not in ops:
            msg = f"unknown operation {op!r} in an AOT artifact expression"
            raise AOTArtifactError(msg)
        return ops[op]()
    msg = f"unknown expression node {dict(tree)!r} in an AOT artifact"
    raise AOTArtifactError(msg)


@dataclass
class AOTArtifact:
    """One AOT kernel as the engine stores it.

    Attributes:
        kernel_name: the ``.entry`` to launch.
        image: the compiled kernel (PTX text or CUBIN bytes).
        image_kind: ``"ptx"`` or ``"cubin"``.
        launch: per :data:`LAUNCH_FIELDS` entry, its expression tree (absent: unset).
        extra_args: per extra kernel argument, ``{"dtype": "INT32", "expr": tree}``.
        output_shapes: per output, one expression tree per dimension.
        input_types, output_types: ``DataType`` member names.
        formats: ``TensorFormat`` member names, inputs then outputs.
        tactic: the tactic the kernel was made for.
        plugin: ``"namespace::name"``, for messages.
    """

    kernel_name: str
    image: bytes
    image_kind: str
    launch: Dict[str, Any]
    extra_args: List[Dict[str, Any]]
    output_shapes: List[List[Any]]
    input_types: List[str]
    output_types: List[str]
    formats: List[str]
    tactic: int
    plugin: str = ""
    notes: List[str] = field(default_factory=list)

    # -- storage -------------------------------------------------------------------------------
    def header(self) -> Dict[str, Any]:
        """Everything but the kernel image, as JSON-able data."""
        data = asdict(self)
        data.pop("image")
        data["format_version"] = FORMAT_VERSION
        data["image_bytes"] = len(self.image)
        return data

    def to_bytes(self) -> bytes:
        """``magic | header length (u32) | JSON header | image``: what the engine would hold."""
        head = json.dumps(self.header(), sort_keys=True).encode()
        return _MAGIC + struct.pack("<I", len(head)) + head + bytes(self.image)

    @classmethod
    def from_bytes(cls, data: bytes) -> "AOTArtifact":
        """Read :meth:`to_bytes`' output back.

        Raises:
            AOTArtifactError: the bytes are not an artifact of this version.
        """
        if data[:len(_MAGIC)] != _MAGIC or len(data) < len(_MAGIC) + 4:
            msg = "not a pyplugins AOT artifact (bad magic)"
            raise AOTArtifactError(msg)
        (size,) = struct.unpack("<I", data[len(_MAGIC):len(_MAGIC) + 4])
        start = len(_MAGIC) + 4
        try:
            head = json.loads(data[start:start + size].decode())
        except ValueError as err:
            msg = f"the artifact's header is not JSON: {err}"
            raise AOTArtifactError(msg) from err
        if head.pop("format_version", None) != FORMAT_VERSION:
            msg = "the artifact was written by another format version"
            raise AOTArtifactError(msg)
        image = data[start + size:]
        if len(image) != head.pop("image_bytes", -1):
            msg = "the artifact's kernel image is truncated"
            raise AOTArtifactError(msg)
        return cls(image=bytes(image), **head)

    # -- evaluation ----------------------------------------------------------------------------
    def launch_plan(self, input_shapes: Mapping[Any, Sequence[int]]) -> Dict[str, Any]:
        """What TensorRT launches for these input shapes: ``grid`` and ``block`` (3-tuples),
        ``shared_mem``, ``extra`` (the int values of the extra arguments) and ``outputs`` (each
        output's shape).

        Raises:
            AOTArtifactError: an expression cannot be evaluated.
        """
        values = {f: (evaluate(self.launch[f], input_shapes) if self.launch.get(f) is not None
                      else _DEFAULTS[f]) for f in LAUNCH_FIELDS}
        return {
            "grid": (values["grid_x"], values["grid_y"], values["grid_z"]),
            "block": (values["block_x"], values["block_y"], values["block_z"]),
            "shared_mem": values["shared_mem"],
            "extra": [evaluate(a["expr"], input_shapes) for a in self.extra_args],
            "outputs": [tuple(evaluate(d, input_shapes) for d in dims)
                        for dims in self.output_shapes],
        }

    def argument_layout(self) -> List[Tuple[str, Optional[str]]]:
        """The kernel's arguments in launch order: ``("input", type)`` per input, ``("extra",
        dtype)`` per extra argument, ``("output", type)`` per output.

        Example:
            >>> AOTArtifact("k", b"", "ptx", {}, [{"dtype": "INT32", "expr": {"const": 1}}], [[]],
            ...             ["HALF"], ["HALF"], ["LINEAR"] * 2, 0).argument_layout()
            [('input', 'HALF'), ('extra', 'INT32'), ('output', 'HALF')]
        """
        return ([("input", t) for t in self.input_types]
                + [("extra", a.get("dtype")) for a in self.extra_args]
                + [("output", t) for t in self.output_types])
