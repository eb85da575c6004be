"""The ``vllm-cpu`` generation backend: the harness's prompts, vLLM CPU's decoding.

Everything the transformers path decides stays here, in the harness's process: prompts are
rendered and tokenized by :func:`autorl_hf.generation.encode` (the chat template applied
exactly as for transformers) and sent as token ids; the engine returns token ids, which are
cut at the first EOS and decoded by the same tokenizer, then cut at the first stop string
(:func:`autorl_hf.generation.cut_at_stop`). In fp32, greedy, the outputs equal the
transformers path's (the parity test pins it); only the forward passes run in the engine.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autorl_hf.engine.env import EngineUnavailable, require_engine
from autorl_hf.engine.server import MAX_STOP_STRINGS, EngineServer
from autorl_hf.generation import (
    Completion,
    ProgressFn,
    Sampling,
    TokenEngine,
    check_request,
    collect_eos_ids,
    encode,
    finish_completion,
    stop_count,
)
from autorl_hf.loading import OtherLoad, cpu_threads, free_cores

log = logging.getLogger(__name__)
FIRST_READING_S = 0.5
"""How long the first decision on an engine's threads measures the machine."""
PINNED_BY_USER = ("VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU", "OMP_NUM_THREADS")
"""Thread settings of the harness's environment: when it sets any (vLLM's own; a campaign cell's
``OMP_NUM_THREADS``, beside other cells), the engine computes as vLLM decides from them (one
core reserved), and the grader never changes its threads."""


def eos_ids_of(path: Path, tokenizer: Any) -> set[int]:
    """The ids that end a turn, read as :func:`autorl_hf.generation.eos_ids` reads them from a
    loaded model (the generation config's, else the model config's, and the tokenizer's)."""
    from transformers import AutoConfig, GenerationConfig

    try:
        configured = GenerationConfig.from_pretrained(str(path)).eos_token_id
    except OSError:  # no generation_config.json: transformers derives it from config.json
        configured = getattr(AutoConfig.from_pretrained(str(path)), "eos_token_id", None)
    return collect_eos_ids(configured, tokenizer)


HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
"""vLLM CPU 0.32's attention kernels (``CPUAttentionBackend.get_supported_head_sizes``)."""


def check_shapes(path: Path) -> None:
    """Refuse at once a model whose head size vLLM CPU has no kernel for: the engine would
    start (30-50 s) and die at its first forward pass ("Unsupported CPU attention
    configuration")."""
    import json

    try:
        config = json.loads((path / "config.json").read_text())
        text = config.get("text_config", config)
        head_dim = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        return  # not a shape we can read: the engine's own first forward pass decides
    if int(head_dim) not in HEAD_SIZES:
        raise EngineUnavailable(
            f"the vLLM CPU engine cannot run the model {path}: head_dim={head_dim} "
            f"(its CPU attention kernels take {', '.join(map(str, HEAD_SIZES))})",
            hint="use --engine transformers (or auto) for this model",
        )


def finish_row(
    tokenizer: Any,
    eos: set[int],
    row: list[int],
    stop: Sequence[str],
    *,
    cut_row: bool,
    stopped_by_engine: bool,
) -> Completion:
    """As the transformers path finishes a row (cut at EOS, decode, cut at a stop string; the
    engine pads nothing). ``cut_row``: the engine had only some of the stop strings, so the row
    is first cut where the transformers path would have stopped generating it
    (:func:`stop_count`). ``stopped_by_engine``: the engine ended the row on a stop string."""
    if cut_row:
        end = next((i for i, t in enumerate(row) if t in eos), None)
        stopped_at = stop_count(tokenizer, row if end is None else row[:end], stop)
        if stopped_at is not None:
            row = row[:stopped_at]
    return finish_completion(tokenizer, row, eos, None, stop, stopped=stopped_by_engine)


class CPUEngineBackend(TokenEngine):
    """A model directory served by a vLLM CPU engine process for this backend's lifetime."""

    name = "vllm-cpu"

    def __init__(self, path: Path, *, precision: str = "fp32", **server: Any) -> None:
        from autorl_hf.loading import load_tokenizer

        server.setdefault("engine", require_engine())  # before any work: the error says how
        self.path = Path(path)
        check_shapes(self.path)
        self.tokenizer = load_tokenizer(self.path)
        self.eos = eos_ids_of(self.path, self.tokenizer)
        server.setdefault("reloadable", True)  # engine.pool loads the next checkpoint into it
        # A grader's engine starts on every core this process may use and gives one back
        # while other processes keep the machine busy (an agent training beside it): measured
        # before each batch, as the transformers path retunes its threads (free_cores).
        self.cores = cpu_threads()
        self.threads_used: set[int] = set()
        self._load: OtherLoad | None = None
        adaptive = server["reloadable"] and "reserved_cpus" not in server
        self.adaptive = adaptive and not any(name in os.environ for name in PINNED_BY_USER)
        if self.adaptive:
            server["reserved_cpus"] = 0
        self.server = EngineServer(self.path, precision=precision, **server)
        self.load_seconds: list[float] = []
        self.precision = precision
        try:  # a model the engine cannot run fails at its first forward pass, not at start-up
            self.server.complete([self._first_id()], max_tokens=1, temperature=0.0)
        except Exception as exc:
            # the root cause: the exception lines of the engine's tracebacks, each once
            causes = re.findall(r"\b(\w+(?:Error|Exception): .+)", self.server.log_tail(400))
            errors = list(dict.fromkeys(c.strip() for c in causes))
            self.close()
            raise EngineUnavailable(
                f"the vLLM CPU engine cannot run the model {self.path}: {exc}\n"
                + "\n".join(errors[:4]),
                hint="vLLM CPU supports fewer shapes than transformers (its attention "
                "kernels take head sizes 32, 64, 80, 96, 112, 128, ...); use "
                "--engine transformers for this model",
            ) from exc

    def _first_id(self) -> int:
        ids = encode(self.tokenizer, "Hello")
        return ids[0] if ids else 0

    def begin_evaluation(self) -> None:
        """A new evaluation takes this engine (engine.pool): its own record of threads, and a
        fresh reading of the machine (the last one may span an agent's whole training)."""
        self.threads_used.clear()
        self._load = None

    def retune(self) -> int | None:
        """Before a batch: the engine's threads set to the cores nothing else kept busy since
        the last batch (at least one); the count, None where the grader does not set it.

        An evaluation's first reading starts here, not before the engine's start: vLLM's start
        runs short-lived processes of its own that read as other load once they are gone (the
        default run's first turn went to one thread); it measures half a second. A
        single-batch evaluation (``exact``, ``code``, ``judge``) decides once; a multi-turn one
        (``rollout``) before each turn. A failed change is logged and ends the tuning for this
        engine: threads change speed, never what is graded."""
        if not self.adaptive:
            return None
        try:
            if self.server.threads is None:  # vLLM bound one thread per core it took at start
                self.cores = max(1, min(self.cores, self.server.threads_now()))
            if self._load is None:
                self._load = OtherLoad(also_ours=self.server.group_pids)
                time.sleep(FIRST_READING_S)
            others = self._load.cores(min_interval=FIRST_READING_S)
            if others is not None or self.server.threads is None:
                wanted = free_cores(self.cores, others if others is not None else 0.0)
                if wanted != self.server.threads:
                    self.server.set_threads(wanted)
        except Exception as exc:  # a speed setting: the evaluation goes on
            log.warning("the engine's threads stay as they are: %s", exc)
            self.adaptive = False
            return self.server.threads
        assert self.server.threads is not None
        self.threads_used.add(self.server.threads)
        return self.server.threads

    @property
    def info(self) -> dict[str, Any]:
        """What the manifest records: engine, version, precision (and the threads the model
        computed on, where the grader set them: outputs do not depend on them)."""
        info: dict[str, Any] = {
            "name": self.name,
            "version": self.server.engine.version,
            "precision": self.precision,
        }
        if self.threads_used:
            info["threads"] = sorted(self.threads_used)
        return info

    def _complete(
        self, encoded: list[list[int]], sampling: Sampling, progress: ProgressFn | None
    ) -> list[Completion]:
        check_request(encoded, sampling.max_new_tokens, sampling.temperature)
        self.retune()
        stops = [s for s in sampling.stop if s]
        # a request carries at most MAX_STOP_STRINGS: any of them ends a completion at or
        # after the first of all of them, so past that many the engine stops early on those
        # and the cut below finds where every one ends it
        server_stops = stops[:MAX_STOP_STRINGS]
        params = [
            {
                "max_tokens": sampling.max_new_tokens,
                "temperature": sampling.temperature,
                "top_p": 1.0,
                "top_k": -1,
                # per prompt, as the transformers path seeds one stream per call
                "seed": sampling.seed + i,
                "stop": server_stops,
                "stop_token_ids": sorted(self.eos),
                "skip_special_tokens": True,
            }
            for i in range(len(encoded))
        ]
        choices = self.server.complete_many(encoded, params, progress)
        cut_rows = len(stops) > len(server_stops)
        return [
            finish_row(
                self.tokenizer,
                self.eos,
                list(choice.get("token_ids") or []),
                stops,
                cut_row=cut_rows,
                stopped_by_engine=choice.get("finish_reason") == "stop",
            )
            for choice in choices
        ]

    def load(self, path: Path) -> None:
        """Serve ``path``'s weights from now on (engine.pool checked that its frame, the
        tokenizer included, is this model's)."""
        self.load_seconds.append(self.server.load_weights(Path(path)))
        self.path = Path(path)

    def alive(self) -> bool:
        """The engine process still runs (an idle one may be taken again: engine.pool)."""
        return self.server.process.poll() is None

    def close(self) -> None:
        self.server.close()
