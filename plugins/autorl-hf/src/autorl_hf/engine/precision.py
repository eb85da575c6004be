"""Which precision the vLLM CPU engine runs in: ``fp32``, ``bf16``, or ``auto`` (measured).

``fp32`` is the default on CPU: greedy outputs equal the transformers path's, so scores stay
comparable with every number measured before the engine. ``bf16`` is chosen explicitly, or by
``auto`` when this host's bf16 matmul is at least :data:`SPEEDUP` times its fp32 matmul. Hosts
differ (one of this project's machine kind ran bf16 at 6x fp32, another at 1/400 of it), so
``auto`` measures, never assumes: :func:`measure` times a square matmul per dtype with torch on
the threads the engine's worker uses, ``autorl engine prepare`` stores the numbers and the
choice in the engine's stamp, and :func:`resolve_precision` reads them from there (measuring,
and saying so, when the stamp has none).

Importing this module imports nothing heavy; torch is imported by :func:`measure` only.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from autorl.config import ENGINE_PRECISION_ENV as PRECISION_ENV
from autorl.config import ENGINE_PRECISION_REASON_ENV as REASON_ENV
from autorl.config import ENGINE_PRECISIONS as SETTINGS
from autorl.errors import AutorlError

DEFAULT = "fp32"
SPEEDUP = 2.0
"""``auto`` picks bf16 only when its matmul rate is at least this multiple of fp32's."""
SIZE = 1024
SECONDS = 0.3
"""Per dtype: the matmul is repeated for about this long in all (after a warm-up)."""
ROUNDS = 3
PROBE = 256
"""A host without bf16 units ran bf16 at 0.3 GFLOP/s: one 1024^2 matmul would take 7 s. Each
dtype is probed at this size first, and measured at it when one matmul of the full size would
take longer than a round (:data:`SECONDS` / :data:`ROUNDS`)."""
log = logging.getLogger(__name__)


class PrecisionError(AutorlError):
    """A precision setting that is none of :data:`SETTINGS`."""


@dataclass(frozen=True)
class MatmulBench:
    """One measurement: GFLOP/s of a square matmul in fp32 and in bf16 on ``threads`` threads."""

    fp32_gflops: float
    bf16_gflops: float
    size: int
    threads: int
    torch: str = ""
    measured: str = ""
    """When (UTC, ISO 8601)."""

    @property
    def ratio(self) -> float:
        """bf16's rate over fp32's."""
        return self.bf16_gflops / self.fp32_gflops if self.fp32_gflops > 0 else 0.0

    def choice(self) -> tuple[str, str]:
        """What ``auto`` picks from these numbers, and why (the 2x rule)."""
        rates = (
            f"bf16 matmul {self.bf16_gflops:.1f} GFLOP/s vs fp32 {self.fp32_gflops:.1f} "
            f"({self.ratio:.2f}x; {self.size}^2, {self.threads} thread(s))"
        )
        if self.ratio >= SPEEDUP:
            return "bf16", f"auto: {rates} >= {SPEEDUP:g}x"
        return "fp32", f"auto: {rates} < {SPEEDUP:g}x"

    def to_dict(self) -> dict[str, Any]:
        """What the stamp stores: the numbers, the choice and its reason."""
        precision, reason = self.choice()
        return {**asdict(self), "choice": precision, "reason": reason}

    @classmethod
    def from_dict(cls, data: Any) -> MatmulBench | None:
        """The measurement a stamp holds, or None (absent, or not readable)."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                fp32_gflops=float(data["fp32_gflops"]),
                bf16_gflops=float(data["bf16_gflops"]),
                size=int(data.get("size", SIZE)),
                threads=int(data.get("threads", 1)),
                torch=str(data.get("torch", "")),
                measured=str(data.get("measured", "")),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Resolved:
    """A precision setting resolved for this host: what the engine runs in, and why."""

    precision: str
    setting: str
    reason: str
    bench: MatmulBench | None = None

    def record(self) -> dict[str, Any]:
        """For ``metrics.engine`` and the manifest."""
        data: dict[str, Any] = {"precision": self.precision, "precision_setting": self.setting}
        data["precision_reason"] = self.reason
        if self.bench is not None:
            data["matmul_gflops"] = {
                "fp32": round(self.bench.fp32_gflops, 1),
                "bf16": round(self.bench.bf16_gflops, 1),
            }
        return data


def engine_threads() -> int:
    """The threads the engine's worker runs the model on: this process's cores less the ones
    vLLM reserves (``VLLM_CPU_NUM_OF_RESERVED_CPU``; one when there are several, as
    :func:`autorl_hf.engine.server.engine_environ` sets it)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    raw = os.environ.get("VLLM_CPU_NUM_OF_RESERVED_CPU", "").strip()
    reserved = int(raw) if raw.isdigit() else (1 if cores > 1 else 0)
    return max(1, cores - reserved)


def _timed(torch: Any, dtype: Any, n: int, budget: float) -> float:
    """GFLOP/s of ``n``^2 matmuls in ``dtype``, repeated for about ``budget`` seconds."""
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    torch.mm(a, b)  # warm-up: the first matmul of a process also initialises kernels
    runs, start = 0, time.perf_counter()
    while True:
        torch.mm(a, b)
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget or (runs >= 2 and elapsed + elapsed / runs > 2 * budget):
            break
    return 2.0 * n**3 * runs / elapsed / 1e9


def measure(
    *, size: int = SIZE, seconds: float = SECONDS, threads: int | None = None
) -> MatmulBench:
    """Time a ``size``^2 matmul in fp32 and in bf16 (torch, ``threads``: the engine's by
    default), each for about ``seconds``: :data:`ROUNDS` alternating rounds, the best round of
    each dtype (other work on the machine slows a round; it does not speed one up). About a
    second in all on a host with bf16 units."""
    import torch

    threads = threads or engine_threads()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    try:
        sizes: dict[str, int] = {}
        for name, dtype in dtypes.items():  # a dtype without fast units stays at the probe
            probe = min(PROBE, size)
            rate = _timed(torch, dtype, probe, seconds / 8)
            one_matmul_s = 2.0 * size**3 / max(rate * 1e9, 1.0)
            sizes[name] = probe if one_matmul_s > seconds / ROUNDS else size
        best = dict.fromkeys(dtypes, 0.0)
        for _ in range(ROUNDS):
            for name, dtype in dtypes.items():
                rate = _timed(torch, dtype, sizes[name], seconds / ROUNDS)
                best[name] = max(best[name], rate)
    finally:
        torch.set_num_threads(before)
    return MatmulBench(
        fp32_gflops=round(best["fp32"], 2),
        bf16_gflops=round(best["bf16"], 2),
        size=min(sizes.values()),
        threads=threads,
        torch=str(torch.__version__),
        measured=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    )


def check_setting(value: str | None, where: str = "$AUTORL_ENGINE_PRECISION") -> str:
    """``value`` as a setting (``fp32`` when unset), or :class:`PrecisionError` naming it."""
    setting = (value or "").strip().lower() or DEFAULT
    if setting not in SETTINGS:
        raise PrecisionError(
            f"{where}={value!r} is not an engine precision",
            hint="use fp32 (the default: outputs equal the transformers path's), bf16, or "
            "auto (bf16 when this host's bf16 matmul is at least 2x fp32; docs/engine.md)",
        )
    return setting


_measured_now: MatmulBench | None = None
"""A measurement this process made because the stamp had none (made once per process)."""


def stamped_bench() -> MatmulBench | None:
    """The measurement ``autorl engine prepare`` stored in the engine's stamp, if any."""
    from autorl_hf.engine.env import find_engine

    found = find_engine()
    return MatmulBench.from_dict(found.precision) if found is not None else None


def resolve_precision(
    value: str | None,
    *,
    stamped: Callable[[], MatmulBench | None] | None = None,
    measure_now: Callable[[], MatmulBench] | None = None,
) -> Resolved:
    """The precision ``value`` (a setting; unset: fp32) means on this host. ``auto`` reads the
    engine stamp's measurement, or measures now (once per process) and says so."""
    global _measured_now
    setting = check_setting(value)
    if setting != "auto":
        why = "the default" if not (value or "").strip() else "set explicitly"
        return Resolved(setting, setting, why)
    bench = (stamped or stamped_bench)()
    source = "measured at `autorl engine prepare`"
    if bench is None:
        if _measured_now is None:
            log.warning(
                "engine precision auto: the engine's stamp holds no matmul measurement "
                "(`autorl engine prepare` stores one); measuring now"
            )
            _measured_now = (measure_now or measure)()
        bench = _measured_now
        source = "measured now: the engine's stamp holds none (`autorl engine prepare` stores it)"
    precision, reason = bench.choice()
    return Resolved(precision, "auto", f"{reason}; {source}", bench)


def pinned_env(resolved: Resolved) -> dict[str, str]:
    """The environment that fixes ``resolved`` for a run's evaluations: the precision itself
    (so the baseline, every submission and the baseline cache's key agree, and nothing measures
    mid-run) and, for ``auto``, why it was chosen (empty otherwise: a stale reason is cleared)."""
    return {
        PRECISION_ENV: resolved.precision,
        REASON_ENV: resolved.reason if resolved.setting == "auto" else "",
    }


def resolve_from_env(**kwargs: Any) -> Resolved:
    """:func:`resolve_precision` of ``$AUTORL_ENGINE_PRECISION``; a precision a run pinned from
    ``auto`` (:func:`pinned_env`) reads as ``auto``, with the run's reason."""
    resolved = resolve_precision(os.environ.get(PRECISION_ENV), **kwargs)
    reason = os.environ.get(REASON_ENV, "").strip()
    if reason and resolved.setting != "auto":
        return Resolved(resolved.precision, "auto", reason)
    return resolved
