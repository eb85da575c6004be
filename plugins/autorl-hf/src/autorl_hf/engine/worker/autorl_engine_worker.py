"""Loaded by the vLLM CPU engine's worker (``--worker-extension-cls``), in the engine's own
environment: it imports vLLM only, never autorl.

Why: one engine serves every evaluation of a run, whatever the weights, when the model's frame
(config, tokenizer) is the same, as a graded checkpoint's is (the base's frame around the
submitted tensors). Loading new weights into the running model took ~1.5 s where a start took
60 s. vLLM's ``reload_weights`` loads them, but on the CPU a layer whose weight it did not
load itself keeps the packed copy its matrix-product kernel made at start-up: the output head
tied to the embedding (SmolLM2) went on computing logits with the old embedding (outputs
differed from a fresh engine's over the same weights). So every linear layer that still holds
its weight gets its kernel made again from it.

And the number of threads the model computes on, changed between batches: vLLM fixes it at
start-up (and makes ``torch.set_num_threads`` a no-op), but an engine that has every core while
nothing else runs must give one back when an agent trains beside it.
"""

from __future__ import annotations

from typing import Any


class WeightLoader:
    """Mixed into vLLM's worker class; called through the engine's ``/collective_rpc``."""

    def autorl_load_weights(self, path: str) -> int:
        """Load ``path``'s weights into the running model; how many kernels were remade."""
        from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

        self.reload_weights(weights_path=path)  # type: ignore[attr-defined]
        model: Any = self.model_runner.model  # type: ignore[attr-defined]
        remade = 0
        for module in model.modules():
            weight = getattr(module, "weight", None)
            # a layer whose weight was packed away (empty) had its kernel remade by the reload;
            # one vLLM keeps on the plain product (MLA's kv_b_proj) is left so, as at start-up
            if hasattr(module, "cpu_linear") and weight is not None and weight.dim() == 2:
                if not weight.numel() or getattr(module, "_cpu_skip_gemm_dispatch", False):
                    continue
                dispatch_cpu_unquantized_gemm(module, remove_weight=False)
                remade += 1
        return remade

    def autorl_threads(self) -> int:
        """The model's OpenMP threads (at start: one per core vLLM bound the worker to)."""
        import torch

        return int(torch.get_num_threads())

    def autorl_set_threads(self, threads: int) -> int:
        """Compute on ``threads`` OpenMP threads from the next batch on (the worker keeps the
        cores vLLM bound it to); the count now."""
        import torch

        torch._C.set_num_threads(max(1, int(threads)))  # vLLM's patch skips torch's own
        return int(torch.get_num_threads())
