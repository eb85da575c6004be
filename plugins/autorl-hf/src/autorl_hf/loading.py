"""Load a Hugging Face model directory for inference, padded on the left for batched generation."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from autorl_hf.checkpoint import CheckpointError


def pick_device(device: str = "auto") -> str:
    """``auto`` means the first CUDA GPU when there is one, else the CPU."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _affinity() -> list[int] | None:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return None


def cpu_threads() -> int:
    """Cores this process may use (``OMP_NUM_THREADS`` wins): torch can over- or undercount."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    cpus = _affinity()
    return max(1, len(cpus) if cpus is not None else os.cpu_count() or 1)


SMALL_MODEL_PARAMS = 20_000_000
"""Below this, one thread: each op is too small to split (measured on the tiny model: 16 steps in
0.07 s on one thread, 1-6 s on two threads of a busy two-core machine)."""


def free_cores(cores: int, others: float | None = None) -> int:
    """Cores not already busy with other processes: ``others`` busy cores (measured by
    :class:`OtherLoad`), else the 1-minute load average less our own 1.

    OpenMP threads wait for each other at every op: one descheduled thread stalls them all. On a
    busy two-core machine two threads made SmolLM2 prefill 10x slower than one (10.9 s vs 1.1 s).
    """
    if others is None:
        try:
            others = max(0.0, os.getloadavg()[0] - 1.0)
        except OSError:  # not available on this platform
            return cores
    return max(1, min(cores, cores - math.ceil(others - 0.25)))


class OtherLoad:
    """Cores other processes kept busy since the last reading: the machine's CPU time less this
    process's (and ``also_ours()``'s: a vLLM engine's processes), over the wall time between
    readings (psutil).

    Measured over the last batch, it follows the machine within seconds, where the 1-minute
    load average lags a minute behind (and counts this process's own threads): an evaluation
    that started beside a training agent stayed on one thread long after the agent ended (v1 of
    the default run took 436 s to evaluate instead of 163 s)."""

    def __init__(self, also_ours: Callable[[], Iterable[int]] | None = None) -> None:
        self._also_ours = also_ours
        self._last = self._reading()

    def _reading(self) -> tuple[float, float, float]:
        import psutil

        own_cpus = _affinity()
        if own_cpus is not None and len(own_cpus) < (psutil.cpu_count() or 0):
            # only the CPUs this process may run on: a busy one elsewhere takes none of ours
            per_cpu = psutil.cpu_times(percpu=True)
            machine = [per_cpu[i] for i in own_cpus if i < len(per_cpu)]
        else:
            machine = [psutil.cpu_times()]
        busy = sum(sum(t) - t.idle - getattr(t, "iowait", 0.0) for t in machine)
        own = psutil.Process().cpu_times()
        ours = own.user + own.system
        for pid in self._also_ours() if self._also_ours is not None else ():
            with contextlib.suppress(psutil.Error):
                times = psutil.Process(pid).cpu_times()
                ours += times.user + times.system
        return time.monotonic(), busy, ours

    def cores(self, min_interval: float = 0.5) -> float | None:
        """Busy cores elsewhere since the last call; None when too little time has passed."""
        now = self._reading()
        wall = now[0] - self._last[0]
        if wall < min_interval:
            return None
        others = max(0.0, (now[1] - self._last[1]) - (now[2] - self._last[2])) / wall
        self._last = now
        return others


_OTHER_LOAD: OtherLoad | None = None


def retune_threads(n_params: int | None = None) -> int:
    """:func:`configure_threads` again, between batches of a long generation, from the load
    other processes put on the machine since the last batch (:class:`OtherLoad`)."""
    global _OTHER_LOAD
    import torch

    if _OTHER_LOAD is None:
        _OTHER_LOAD = OtherLoad()
        return torch.get_num_threads()
    others = _OTHER_LOAD.cores()
    if others is None:
        return torch.get_num_threads()
    return configure_threads(n_params, others=others)


def configure_threads(n_params: int | None = None, others: float | None = None) -> int:
    """Intra-op threads: ``OMP_NUM_THREADS`` if set; one for small models; else the free cores."""
    import torch

    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        wanted = int(env)
    elif n_params is not None and n_params < SMALL_MODEL_PARAMS:
        wanted = 1
    else:
        wanted = free_cores(cpu_threads(), others)
    if torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
    return wanted


def load_tokenizer(path: str | Path) -> Any:
    """The directory's tokenizer, left-padded, with a pad token (the EOS token if it has none)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise CheckpointError(
                f"{path}: the tokenizer has neither a pad nor an eos token; set "
                "tokenizer.eos_token and save it again (tokenizer.save_pretrained)"
            )
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(path: str | Path, *, device: str = "auto", dtype: Any = None) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)`` in eval mode on ``device`` (fp32 on CPU, bf16 on GPU)."""
    import torch
    from transformers import AutoModelForCausalLM

    path = Path(path)
    if not (path / "config.json").is_file():
        raise CheckpointError(
            f"{path}: not a Hugging Face model directory (no config.json); pass a directory "
            "written by model.save_pretrained(...)"
        )
    device = pick_device(device)
    if dtype is None:
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a bar per evaluation would interleave with the console
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
    if device == "cpu":
        configure_threads(sum(p.numel() for p in model.parameters()))
    model.to(device)
    model.eval()
    tokenizer = load_tokenizer(path)
    gen = model.generation_config
    if gen.pad_token_id is None:
        gen.pad_token_id = tokenizer.pad_token_id
    if gen.eos_token_id is None and tokenizer.eos_token_id is not None:
        gen.eos_token_id = tokenizer.eos_token_id
    return model, tokenizer
