"""The flat export of an AOT artifact that the C++ launcher reads (``benchmarks/cpp/aot_flat.h``).

:class:`pyplugins.checker.aot_artifact.AOTArtifact` stores its header as JSON, and C++ here has
no JSON reader; this writes the same content as lines of space-separated tokens with the
expressions in prefix notation, then the kernel image (the grammar is in ``aot_flat.h``'s
header). Nothing is lost that a launch needs: the kernel name and image, the seven launch
fields (unset ones as their defaults), the extra arguments and the output shapes.

Example:
    >>> expr_tokens({"op": "CEIL_DIV", "a": {"input": 0, "dim": 1}, "b": {"const": 256}})
    ['CEIL_DIV', 'i', '0', '1', 'c', '256']
"""

from __future__ import annotations

from typing import Any, List, Mapping

from pyplugins.checker.aot_artifact import LAUNCH_FIELDS, AOTArtifact

__all__ = ["FLAT_VERSION", "OPERATIONS", "expr_tokens", "flat_bytes"]

FLAT_VERSION = 1
#: The operations the C++ evaluator knows (TensorRT's DimensionOperation names).
OPERATIONS = ("SUM", "PROD", "MAX", "MIN", "SUB", "EQUAL", "LESS", "FLOOR_DIV", "CEIL_DIV")
_DEFAULTS = {"grid_x": 1, "grid_y": 1, "grid_z": 1, "block_x": 1, "block_y": 1, "block_z": 1,
             "shared_mem": 0}


def expr_tokens(tree: Mapping[str, Any]) -> List[str]:
    """An expression tree (``AOTArtifact``'s plain data) in the export's prefix notation.

    Raises:
        ValueError: a node or operation the C++ evaluator does not know.
    """
    if "const" in tree:
        return ["c", str(int(tree["const"]))]
    if "input" in tree:
        return ["i", str(int(tree["input"])), str(int(tree["dim"]))]
    if "size" in tree:
        return ["s", str(int(tree["size"]))] + expr_tokens(tree["opt"]) + expr_tokens(
            tree["upper"])
    if tree.get("op") in OPERATIONS:
        return [str(tree["op"])] + expr_tokens(tree["a"]) + expr_tokens(tree["b"])
    msg = (f"expression node {dict(tree)!r} has no flat form; the C++ launcher knows constants, "
           f"input dimensions, size tensors and {', '.join(OPERATIONS)}")
    raise ValueError(msg)


def _names(values: List[str]) -> str:
    for v in values:
        if not v or any(c.isspace() for c in v):
            msg = f"{v!r} cannot be a token of the flat export (empty or holds white space)"
            raise ValueError(msg)
    return " ".join(values)


def flat_bytes(art: AOTArtifact) -> bytes:
    """``art`` in the flat export (see the module docstring).

    Raises:
        ValueError: a name holds white space, or an expression has no flat form.

    Example:
        >>> art = AOTArtifact("k", b"PTX", "ptx", {"block_x": {"const": 256}},
        ...                   [{"dtype": "INT32", "expr": {"input": 0, "dim": 0}}],
        ...                   [[{"input": 0, "dim": 0}]], ["FLOAT"], ["FLOAT"], ["LINEAR"] * 2, 0,
        ...                   "ns::op")
        >>> print(flat_bytes(art).decode())  # doctest: +NORMALIZE_WHITESPACE
        PPAOTFLAT 1
        plugin ns::op
        kernel k
        inputs 1 FLOAT
        outputs 1 FLOAT
        grid_x c 1
        grid_y c 1
        grid_z c 1
        block_x c 256
        block_y c 1
        block_z c 1
        shared_mem c 0
        extra 1
        arg INT32 i 0 0
        output 1 i 0 0
        image ptx 3
        PTX
    """
    lines = [f"PPAOTFLAT {FLAT_VERSION}", f"plugin {_names([art.plugin or '-'])}",
             f"kernel {_names([art.kernel_name])}",
             f"inputs {len(art.input_types)} {_names(art.input_types)}".rstrip(),
             f"outputs {len(art.output_types)} {_names(art.output_types)}".rstrip()]
    for name in LAUNCH_FIELDS:
        tree = art.launch.get(name)
        tokens = expr_tokens(tree) if tree is not None else ["c", str(_DEFAULTS[name])]
        lines.append(" ".join([name] + tokens))
    lines.append(f"extra {len(art.extra_args)}")
    for arg in art.extra_args:
        lines.append(" ".join(["arg", _names([str(arg.get("dtype", "INT32"))])]
                              + expr_tokens(arg["expr"])))
    for dims in art.output_shapes:
        lines.append(" ".join(["output", str(len(dims))] + [t for d in dims
                                                             for t in expr_tokens(d)]))
    image = bytes(art.image)
    lines.append(f"image {art.image_kind} {len(image)}")
    return ("\n".join(lines) + "\n").encode() + image
