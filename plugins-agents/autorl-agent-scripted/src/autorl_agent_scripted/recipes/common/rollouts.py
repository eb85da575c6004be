"""Sampling for online RL that keeps each prompt's keys and values for the loss step.

Why: on a CPU a GRPO step of the interactive recipe is almost all prefill. A WebShop turn is
~150-450 prompt tokens for ~10 action tokens; the rollouts prefill every prompt of every turn,
and the loss step (prompt run without gradient, :func:`interactive.action_logprobs`) prefilled
them all again. Here:

- identical prompts of a turn are prefilled once (the episodes of a group start from the same
  page, and a trained policy often takes the same first actions), one prompt at a time, so no
  padding is computed;
- every row samples from its prompt's cache, expanded to the rows;
- each prompt's keys and values (all but its last token) are kept with the turn, and the loss
  step runs only the last prompt token and the action with gradient over them
  (:func:`cached_logprobs`): the values are those of a fresh prefill under the same weights,
  and the gradient is that of ``detach_prompt`` (none through the prompt's own activations).

Standard library at import time; torch and transformers inside the functions.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

KV = list[tuple[Any, Any]]
"""Keys and values per layer, each ``[1, heads, length, head_dim]``."""


@dataclass
class Sampled:
    """One row's reply and what the loss step needs to score it again."""

    reply: list[int]
    """The sampled token ids (up to and including the end-of-turn token, if reached)."""
    prefix: KV
    """Keys/values of the prompt without its last token (shared between identical prompts)."""
    last: int
    """The prompt's last token: the first position the loss step runs with gradient."""


def cache_arg(model: Any, cache: Any) -> dict[str, Any]:
    """``cache`` as the model's forward takes it: ``cache=`` (transformers 5.2x, where
    ``past_key_values=`` prints a deprecation warning at every call) or ``past_key_values=``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return {_cache_keyword(type(base)): cache}


@functools.lru_cache(maxsize=16)
def _cache_keyword(model_class: type) -> str:
    """Read once per model class (a signature lookup at every decoding step adds up)."""
    names = inspect.signature(model_class.forward).parameters
    return "cache" if "cache" in names else "past_key_values"


def cache_of(output: Any) -> Any:
    """The keys/values cache a forward pass returned (``cache``, or ``past_key_values``)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _layers(cache: Any) -> KV:
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache, strict=True))  # transformers 4.x


def _cache(kv: KV) -> Any:
    from transformers import DynamicCache

    if hasattr(DynamicCache, "from_legacy_cache"):  # transformers 4.x
        return DynamicCache.from_legacy_cache(tuple(kv))
    return DynamicCache(kv)


def left_stacked(prefixes: list[KV]) -> tuple[Any, Any, list[int]]:
    """One batch cache of the rows' prefixes, right-aligned (masked padding on the left: the
    positions were applied when the keys were computed, so padding shifts nothing); returns
    (cache, attention mask, lengths)."""
    import torch

    lengths = [p[0][0].shape[2] for p in prefixes]
    size, width = len(prefixes), max(lengths)
    layers = []
    for layer in range(len(prefixes[0])):
        k0, v0 = prefixes[0][layer]
        keys = k0.new_zeros((size, k0.shape[1], width, k0.shape[3]))
        values = v0.new_zeros((size, v0.shape[1], width, v0.shape[3]))
        for row, prefix in enumerate(prefixes):
            n = lengths[row]
            if n:
                keys[row, :, width - n :] = prefix[layer][0][0]
                values[row, :, width - n :] = prefix[layer][1][0]
        layers.append((keys, values))
    mask = torch.zeros((size, width), dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, width - n :] = 1
    return _cache(layers), mask, lengths


class PrefixStore:
    """Prefilled prompt heads of one rollout batch, so a new prompt runs only past the longest
    head it shares with one of them (the rules and the instruction of a group's episodes, the
    actions two episodes took alike)."""

    def __init__(self) -> None:
        self.heads: list[tuple[list[int], KV]] = []

    def prefill(self, model: Any, head: list[int]) -> KV:
        """Keys/values of ``head``, computed past the longest prefix already stored."""
        import torch

        shared, reuse = 0, None
        for tokens, kv in self.heads:
            n = _common(tokens, head)
            if n > shared:
                shared, reuse = n, kv
        shared = min(shared, len(head) - 1)  # at least one token runs (it yields the cache)
        past = _cache([(k[:, :, :shared], v[:, :, :shared]) for k, v in reuse]) if shared else None
        out = model(
            input_ids=torch.tensor([head[shared:]], device=model.device),
            position_ids=torch.arange(shared, len(head), device=model.device)[None],
            **cache_arg(model, past),
            use_cache=True,
            logits_to_keep=1,
        )
        kv = _layers(cache_of(out))
        self.heads.append((head, kv))
        return kv


def _common(a: list[int], b: list[int]) -> int:
    """Length of the longest token prefix ``a`` and ``b`` share (numpy: prompts are long)."""
    import numpy as np

    n = min(len(a), len(b))
    differ = np.asarray(a[:n]) != np.asarray(b[:n])
    return int(differ.argmax()) if differ.any() else n


def sample(
    model: Any,
    prompts: list[list[int]],
    *,
    eos: int,
    temperature: float,
    max_new_tokens: int,
    store: PrefixStore | None = None,
) -> list[Sampled]:
    """Sample one reply per prompt (greedy at ``temperature`` 0), prefilling each distinct
    prompt once, past what ``store`` already holds; every row keeps its prompt's prefix
    keys/values for :func:`cached_logprobs`."""
    import torch

    device = model.device
    store = store if store is not None else PrefixStore()
    distinct: dict[tuple[int, ...], int] = {}
    for prompt in prompts:
        if len(prompt) < 2:
            raise ValueError("every prompt needs at least two tokens")
        distinct.setdefault(tuple(prompt), len(distinct))
    with torch.no_grad():  # prompt[:-1]: the prefix is kept without slicing
        prefixes = [store.prefill(model, list(prompt[:-1])) for prompt in distinct]
        rows = [distinct[tuple(p)] for p in prompts]
        samples = [Sampled([], prefixes[u], p[-1]) for u, p in zip(rows, prompts, strict=True)]
        cache, mask, lengths = left_stacked([prefixes[u] for u in rows])
        tokens = torch.tensor([[p[-1]] for p in prompts], device=device)
        positions = torch.tensor([[n] for n in lengths], device=device)
        live = [True] * len(prompts)
        for _ in range(max_new_tokens):
            mask = torch.cat([mask, torch.ones((len(prompts), 1), dtype=torch.long)], dim=-1)
            logits = (
                model(
                    input_ids=tokens,
                    attention_mask=mask.to(device),
                    position_ids=positions,
                    **cache_arg(model, cache),
                    use_cache=True,
                )
                .logits[:, -1, :]
                .float()
            )
            if temperature > 0:
                probs = torch.softmax(logits / temperature, dim=-1)
                picked = torch.multinomial(probs, 1)
            else:
                picked = logits.argmax(-1, keepdim=True)
            for row, token in enumerate(picked[:, 0].tolist()):
                if live[row]:
                    samples[row].reply.append(token)
                    live[row] = token != eos
            if not any(live):
                break
            tokens, positions = picked, positions + 1
    return samples


def cached_logprobs(model: Any, items: list[Sampled]) -> Any:
    """Mean log-probability of each item's reply given its prompt, with gradient through the
    last prompt token and the reply only (the prompt's kept keys/values stand for the rest)."""
    import torch

    cache, prefix_mask, lengths = left_stacked([item.prefix for item in items])
    tails = [[item.last, *item.reply] for item in items]
    return tail_logprobs(model, cache, prefix_mask, torch.tensor(lengths), tails)


def tail_logprobs(
    model: Any, cache: Any, prefix_mask: Any, starts: Any, tails: list[list[int]]
) -> Any:
    """Mean log-probability of each tail's tokens after its first, run with gradient over a
    batch ``cache`` of prompt heads (``prefix_mask`` marks their real positions; row ``i``'s
    tail starts at position ``starts[i]``), tails right-padded."""
    import torch

    device = model.device
    span = max(len(t) for t in tails)
    tail_ids = torch.zeros((len(tails), span), dtype=torch.long)
    tail_mask = torch.zeros((len(tails), span), dtype=torch.long)
    for row, tail in enumerate(tails):
        tail_ids[row, : len(tail)] = torch.tensor(tail)
        tail_mask[row, : len(tail)] = 1
    positions = starts.reshape(-1, 1) + torch.arange(span)[None, :]
    logits = (
        model(
            input_ids=tail_ids.to(device),
            attention_mask=torch.cat([prefix_mask, tail_mask], dim=-1).to(device),
            position_ids=positions.to(device),
            **cache_arg(model, cache),
            use_cache=True,
        )
        .logits[:, :-1]
        .float()
    )
    labels = tail_ids[:, 1:].to(device)
    target = tail_mask[:, 1:].to(device).float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, labels[..., None]).squeeze(-1)
    return (logp * target).sum(-1) / target.sum(-1).clamp(min=1.0)
