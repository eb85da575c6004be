"""The run's GPUs: the agent's and the grader's kept disjoint, and the agent's GPU time metered
through NVML and budgeted like driver tokens and cost.

GPU numbers are device-node numbers (``/dev/nvidiaN``, nvidia-smi's "Minor Number"): that is
what the sandboxes bind. NVML is read through ``nvidia-ml-py`` (``pip install
autorl-runner[gpu]``), imported only by a run that names GPUs. ``AUTORL_GPU_PROBE=module:Class``
replaces NVML with another probe (a cluster's own telemetry, or the fake device lists of the
tests); it is read from the harness's environment, which the agent never sees.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

from autorl.errors import ConfigError

PROBE_ENV = "AUTORL_GPU_PROBE"
SAMPLE_SECONDS = 2.0


class GpuProbe(Protocol):
    """What the meter reads from the machine's GPUs."""

    def minors(self) -> list[int]:
        """The device-node numbers of every GPU on the machine, in NVML (PCI bus) order."""
        ...

    def utilization(self, minor: int) -> float:
        """Percent of the last sample period in which a kernel ran on that GPU (0-100)."""
        ...


class NvmlProbe:
    """The machine's GPUs through NVML (``nvidia-ml-py``)."""

    def __init__(self) -> None:
        try:
            import pynvml
        except ImportError:
            raise ConfigError(
                "the run names GPUs but nvidia-ml-py is not installed: GPU time is metered "
                "through NVML",
                hint="pip install 'autorl-runner[gpu]' (nvidia-ml-py), or drop "
                "limits.gpus/grader.gpus",
            ) from None
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise ConfigError(
                f"the run names GPUs but NVML cannot start here: {exc}",
                hint="run on a machine with an NVIDIA driver, or drop limits.gpus / grader.gpus",
            ) from None
        self._nvml = pynvml
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self._handles = {pynvml.nvmlDeviceGetMinorNumber(h): h for h in handles}

    def minors(self) -> list[int]:
        return list(self._handles)

    def utilization(self, minor: int) -> float:
        return float(self._nvml.nvmlDeviceGetUtilizationRates(self._handles[minor]).gpu)


def load_probe() -> GpuProbe:
    """NVML, or the probe ``$AUTORL_GPU_PROBE`` names (``module:Class``)."""
    ref = os.environ.get(PROBE_ENV, "")
    if not ref:
        return NvmlProbe()
    module, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)()
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"${PROBE_ENV}={ref!r} does not name a GPU probe: {exc}",
            hint="set it to module:Class (with minors() and utilization(minor)), or unset it",
        ) from None


def plan(agent: Sequence[int], grader: Sequence[int], device: str, probe: GpuProbe) -> str:
    """Check the run's GPUs against the machine, confine the harness's CUDA to the grader's
    GPUs, and return the grader's evaluation device.

    The config has checked that the two lists are disjoint; here they must exist. When the
    agent has GPUs and the grader names none, the grader takes the first GPU that is not the
    agent's. The harness process then sees only the grader's GPUs (``CUDA_VISIBLE_DEVICES``,
    in NVML's order): every backend, vLLM included, evaluates there and cannot touch the
    agent's devices, which reach the agent's sandbox as device nodes.
    """
    if grader and device == "cpu":
        raise ConfigError(
            f"grader.gpus = {list(grader)} but device = 'cpu'",
            hint="set device = 'auto' (or 'cuda') to evaluate on those GPUs, or drop grader.gpus",
        )
    minors = probe.minors()
    missing = sorted((set(agent) | set(grader)) - set(minors))
    if missing:
        raise ConfigError(
            f"GPU {', '.join(map(str, missing))} is not on this machine "
            f"(its GPUs: {', '.join(map(str, minors)) or 'none'})",
            hint="name GPUs by their device-node number (/dev/nvidiaN, nvidia-smi's Minor Number)",
        )
    if device == "cpu":
        return device
    visible = _visible(minors)  # a harness started with CUDA_VISIBLE_DEVICES (a campaign cell)
    chosen = list(grader) or [m for m in visible if m not in agent][:1]
    if not chosen:
        raise ConfigError(
            f"every GPU the harness sees is the agent's ({', '.join(map(str, agent))}), so "
            "evaluations would run on them",
            hint="leave one out of limits.gpus and name it in grader.gpus, or set device = 'cpu'",
        )
    unseen = [g for g in chosen if g not in visible]
    if unseen:
        raise ConfigError(
            f"grader.gpus names GPU {', '.join(map(str, unseen))}, which this harness may not "
            f"use (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')})",
            hint="unset CUDA_VISIBLE_DEVICES for the harness, or name a GPU it lists",
        )
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA numbers GPUs as NVML does
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(minors.index(g)) for g in chosen)
    return "cuda"


def _visible(minors: list[int]) -> list[int]:
    """The GPUs (device-node numbers) this process's CUDA may use."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return list(minors)
    picked = [int(p) for p in env.split(",") if p.strip().isdigit()]
    return [minors[i] for i in picked if i < len(minors)]


class GpuMeter:
    """The agent's GPU-hours: every ``period`` seconds, each of its GPUs adds its NVML
    utilisation times the time since the last sample (a GPU busy half the time for an hour
    counts 0.5 GPU-hours). Idle GPUs cost nothing, as unspent tokens do."""

    def __init__(
        self,
        probe: GpuProbe,
        gpus: Sequence[int],
        limit_hours: float | None = None,
        period: float = SAMPLE_SECONDS,
    ) -> None:
        self.probe = probe
        self.gpus = list(gpus)
        self.limit_hours = limit_hours
        self.period = period
        self._seconds = dict.fromkeys(self.gpus, 0.0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0

    def start(self) -> GpuMeter:
        self._thread = threading.Thread(target=self._loop, name="gpu-meter", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 * self.period)

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.period):
            now = time.monotonic()
            self.sample(now - last)
            last = now

    def sample(self, seconds: float) -> None:
        """Charge ``seconds`` at each GPU's current utilisation (a failed read charges the
        whole interval: an unreadable GPU is never free)."""
        for gpu in self.gpus:
            try:
                busy = min(100.0, max(0.0, self.probe.utilization(gpu))) / 100.0
            except Exception:
                self.errors += 1
                busy = 1.0
            with self._lock:
                self._seconds[gpu] += busy * seconds

    def hours(self) -> float:
        with self._lock:
            return sum(self._seconds.values()) / 3600.0

    @property
    def exceeded(self) -> bool:
        return self.limit_hours is not None and self.hours() >= self.limit_hours

    def snapshot(self) -> dict[str, Any]:
        """What ``/budget``, the events and ``run.json`` show."""
        with self._lock:
            per_gpu = {str(g): round(s / 3600.0, 5) for g, s in self._seconds.items()}
        used = sum(per_gpu.values())
        remaining = None if self.limit_hours is None else max(0.0, self.limit_hours - used)
        return {
            "gpus": self.gpus,
            "gpu_hours": round(used, 5),
            "max_gpu_hours": self.limit_hours,
            "gpu_hours_remaining": None if remaining is None else round(remaining, 5),
            "per_gpu_hours": per_gpu,
            "read_errors": self.errors,
        }
