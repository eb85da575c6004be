"""The vLLM backend (CUDA GPUs only), kept apart so nothing else ever imports vllm.

It takes the same prompts as the transformers path and tokenizes them the same way (prompts go
to vLLM as token ids), so both backends see identical inputs. It cannot run on a CPU-only
machine; :func:`vllm_available` says whether it can run here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from autorl_hf.generation import Completion, ProgressFn, Sampling, TokenEngine, cut_at_stop


def vllm_available() -> bool:
    """True when vLLM is installed and a CUDA GPU is visible (without importing vLLM)."""
    if importlib.util.find_spec("vllm") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


class VLLMEngine(TokenEngine):
    """One ``vllm.LLM`` over a model directory, reused for every call."""

    def __init__(self, path: Path, *, gpu_memory_utilization: float = 0.5, seed: int = 0) -> None:
        from vllm import LLM

        # prefix caching: every prompt of a task shares its instructions (and a rollout's turns
        # share the episode so far), computed once instead of once per prompt
        self.llm = LLM(
            model=str(path),
            seed=seed,
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=True,
        )
        self.tokenizer = self.llm.get_tokenizer()

    def _complete(
        self, encoded: list[list[int]], sampling: Sampling, progress: ProgressFn | None
    ) -> list[Completion]:
        from vllm import SamplingParams

        stop = sampling.stop
        params = SamplingParams(
            max_tokens=sampling.max_new_tokens,
            temperature=sampling.temperature,
            stop=[s for s in stop if s] or None,
            seed=sampling.seed,
        )
        inputs: list[Any] = [{"prompt_token_ids": ids} for ids in encoded]
        results = self.llm.generate(inputs, params, use_tqdm=False)
        out = []
        for result in results:
            first = result.outputs[0]
            text, cut = cut_at_stop(first.text, stop)
            reason = "stop" if cut or first.stop_reason is not None else "eos"
            if first.finish_reason == "length":
                reason = "length"
            out.append(Completion(text=text, tokens=len(first.token_ids), finish=reason))
        if progress is not None:
            progress(len(out), len(out))
        return out
