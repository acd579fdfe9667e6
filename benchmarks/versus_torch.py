"""Section 4's peers: each op's PyTorch equivalent on the same inputs and dtype.

``prepare(label, fields, inputs)`` returns a zero-argument callable giving the outputs as a list;
anything that a real model would precompute once (RoPE's cos/sin tables) is computed here, not
in the timed call. ``relative_error`` compares a plugin's outputs with a torch equivalent's.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

#: Torch equivalents that count as "composed" (several kernels) for the 1.5x targets.
COMPOSED = ("RoPE composed (rotate-half)", "RMSNorm composed")

#: Labels with no torch kernel for a dtype (torch has no CUDA int8 pooling).
UNSUPPORTED_DTYPES = {"F.max_pool2d": ("int8",), "F.avg_pool2d": ("int8",)}


def supported(label: str, dtype: str) -> bool:
    return dtype not in UNSUPPORTED_DTYPES.get(label, ())


def prepare(label: str, fields: Dict[str, Any], inputs: Sequence[Any]) -> Callable[[], List[Any]]:
    """A callable computing ``label`` on ``inputs`` (torch tensors) with the case's fields.

    Raises:
        KeyError: for a label this module does not know.
    """
    import torch
    import torch.nn.functional as F

    x = inputs[0]
    if label == "F.leaky_relu":
        slope = float(fields["neg_slope"])
        return lambda: [F.leaky_relu(x, slope)]
    if label == "F.pad circular":
        pads = tuple(int(p) for p in fields["pads"])
        return lambda: [F.pad(x, pads, mode="circular")]
    if label == "torch.cat + clone":
        b = inputs[1]
        return lambda: [torch.cat([x, b], 0), b.clone()]
    if label in ("F.max_pool2d", "F.avg_pool2d"):
        k, s, p = (tuple(fields[n]) for n in ("kernel", "stride", "padding"))
        if label == "F.max_pool2d":
            return lambda: [F.max_pool2d(x, k, s, p)]
        return lambda: [F.avg_pool2d(x, k, s, p, count_include_pad=False)]
    if label == "RoPE composed (rotate-half)":
        return _rope(x, fields)
    if label == "RMSNorm composed":
        w, eps = inputs[1], float(fields["eps"])

        def rmsnorm() -> List[Any]:  # the pow/mean/rsqrt/mul form of common model code
            xf = x.float()
            y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
            return [w * y.to(x.dtype)]
        return rmsnorm
    if label == "F.rms_norm":
        w, eps = inputs[1], float(fields["eps"])
        return lambda: [F.rms_norm(x, (x.shape[-1],), w, eps)]
    if label == "repeat_interleave":
        factor = int(fields["factor"])
        return lambda: [x.repeat_interleave(factor, dim=1)]
    msg = f"no torch equivalent named {label!r}"
    raise KeyError(msg)


def _rope(x: Any, fields: Dict[str, Any]) -> Callable[[], List[Any]]:
    """Rotate-half RoPE on [batch, seq, heads, head_dim] with cos/sin tables made beforehand."""
    import torch

    if fields.get("layout", "neox") != "neox":
        msg = "the torch RoPE equivalent is rotate-half (layout 'neox') only"
        raise KeyError(msg)
    rd, seq = int(fields["rotary_dim"]), x.shape[1]
    inv_freq = 1.0 / (float(fields["theta"]) ** (torch.arange(0, rd, 2, device=x.device,
                                                               dtype=torch.float64) / rd))
    pos = torch.arange(seq, device=x.device, dtype=torch.float64) + int(fields["position_offset"])
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)[None, :, None, :]
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    half = rd // 2
    whole = rd == x.shape[-1]

    def rope() -> List[Any]:
        r = x if whole else x[..., :rd]
        rotated = torch.cat([-r[..., half:], r[..., :half]], dim=-1)
        y = r * cos + rotated * sin
        return [y if whole else torch.cat([y, x[..., rd:]], dim=-1)]
    return rope


def relative_error(got: Sequence[Any], want: Sequence[Any]) -> float:
    """||got - want|| / ||want|| over all outputs, in float64 (torch tensors)."""
    import torch

    num = den = 0.0
    for g, w in zip(got, want):
        g64, w64 = g.to(torch.float64).reshape(-1), w.to(torch.float64).reshape(-1)
        num += float(torch.sum((g64 - w64) ** 2))
        den += float(torch.sum(w64 ** 2))
    return (num ** 0.5) / (den ** 0.5) if den > 0 else float(num > 0)
