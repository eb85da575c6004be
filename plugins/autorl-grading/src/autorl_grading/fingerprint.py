"""How far the graded weights are from the base model's, measured on exactly the graded files.

Run by the grading service on its evaluation thread, on the graded directory (never on the
agent's ``output/``, where a FIFO or a link would stall or mislead it), and recorded with the
submission: ``base_distance`` (relative L2, ``||w - w0|| / ||w0||`` over the tensors
both hold), ``tensors_changed`` / ``tensors_total``, the most changed tensors, and
``fingerprint_problem`` when the check could not run. The analysis flags near copies and claims
of training that these observations contradict (docs/analysis.md).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from autorl_grading.graded import is_adapter, weight_files

MAX_BYTES = 8 * 1024**3
"""Weights larger than this are not read for the distance (recorded as a problem)."""
CHANGED_RELATIVE = 1e-7
"""A tensor whose relative change is above this counts as changed (fp32 rounding is ~6e-8)."""
TOP = 5


def _open(files: list[Path], framework: str) -> dict[str, Any]:
    from safetensors import safe_open

    handles: dict[str, Any] = {}
    for path in files:
        handle = safe_open(str(path), framework=framework)
        for key in handle.keys():  # noqa: SIM118 (safe_open is not a mapping)
            handles[key] = handle
    return handles


def _sums(mine: Any, theirs: Any, framework: str) -> tuple[float, float]:
    """(||w - w0||^2, ||w0||^2) of one tensor: float32 dot products (BLAS). Each sum is of
    non-negative terms computed on its own (never a difference of large sums), so float32
    accumulation keeps ~1e-6 relative precision, far below the thresholds that use it; a float64
    copy of every tensor was 7x slower on SmolLM2 (8.9 s vs 1.3 s)."""
    if framework == "numpy":
        import numpy as np

        a = np.asarray(mine, dtype=np.float32).ravel()
        b = np.asarray(theirs, dtype=np.float32).ravel()
        d = a - b
        return float(np.dot(d, d)), float(np.dot(b, b))
    a, b = mine.float().ravel(), theirs.float().ravel()
    d = a - b
    return float(d.dot(d)), float(b.dot(b))


def _measure(graded: list[Path], base: list[Path], framework: str) -> dict[str, Any]:
    mine, theirs = _open(graded, framework), _open(base, framework)
    extra = sorted(set(mine) - set(theirs))
    if extra:
        return _problem(
            f"{len(extra)} tensors are not in the base model (first: {extra[0][:80]!r})"
        )
    diff_total = base_total = 0.0
    changes: list[tuple[float, str]] = []
    compared = 0
    for name in sorted(mine):
        a, b = mine[name].get_tensor(name), theirs[name].get_tensor(name)
        if tuple(a.shape) != tuple(b.shape):
            continue  # a resized embedding (own tokenizer): compared on the rest
        diff, norm = _sums(a, b, framework)
        diff_total, base_total, compared = diff_total + diff, base_total + norm, compared + 1
        relative = math.sqrt(diff / norm) if norm > 0 else math.sqrt(diff)
        changes.append((relative, name))
    if compared == 0 or base_total <= 0:
        return _problem("no tensor of the submission has the base model's shape")
    changed = sorted((c for c in changes if c[0] > CHANGED_RELATIVE), reverse=True)
    return {
        "base_distance": math.sqrt(diff_total / base_total),
        "tensors_changed": len(changed),
        "tensors_total": compared,
        "most_changed": [[name[:120], float(f"{rel:.3e}")] for rel, name in changed[:TOP]],
        "fingerprint_problem": None,
    }


def _problem(why: str) -> dict[str, Any]:
    return {"base_distance": None, "fingerprint_problem": why}


def observe(graded_dir: Path, base_dir: Path) -> dict[str, Any]:
    """The distance of the graded weights to the base's, or why it could not be measured."""
    graded_dir, base_dir = Path(graded_dir), Path(base_dir)
    if is_adapter(graded_dir):
        return _problem("a LoRA adapter: the distance is measured on full models only")
    graded, base = weight_files(graded_dir), weight_files(base_dir)
    if not graded or not base or any(p.suffix != ".safetensors" for p in graded + base):
        return _problem("weights not in safetensors files (a pickle is never read here)")
    if sum(p.stat().st_size for p in graded) > MAX_BYTES:
        return _problem(f"weights over {MAX_BYTES // 1024**3} GiB: not read for the distance")
    try:
        return _measure(graded, base, "numpy")
    except (TypeError, ValueError):  # a dtype numpy lacks (bfloat16): torch reads it
        return _measure(graded, base, "pt")
