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
  and the gradient is that of ``detach_prompt`` (none through the prompt's own activations);
- a prompt's keys and values are kept as pieces (:class:`Keys`): what it shares with a prompt
  prefilled before (the rules, the turns an episode already played) by reference, and only its
  own new positions as a copy. Kept whole, every turn held its whole prompt: a GRPO batch of 8
  ALFWorld episodes (~800-token prompts, up to 50 turns) grew the agent past 14 GB and its
  memory cgroup killed it.

Standard library at import time; torch and transformers inside the functions.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

KV = list[tuple[Any, Any]]
"""Keys and values per layer, each ``[1, heads, length, head_dim]``."""


@dataclass(frozen=True)
class Keys:
    """A prompt's keys/values as consecutive pieces (each a :data:`KV`); pieces are shared by
    every prompt that starts with them, so a prompt costs only its own new positions."""

    pieces: tuple[KV, ...]

    @property
    def length(self) -> int:
        return sum(piece[0][0].shape[2] for piece in self.pieces)

    def head(self, n: int) -> Keys:
        """The first ``n`` positions (views of the pieces: nothing is copied)."""
        out: list[KV] = []
        for piece in self.pieces:
            size = piece[0][0].shape[2]
            if n <= 0:
                break
            out.append(piece if size <= n else [(k[:, :, :n], v[:, :, :n]) for k, v in piece])
            n -= size
        return Keys(tuple(out))

    def then(self, piece: KV) -> Keys:
        return Keys((*self.pieces, piece))

    def layer(self, index: int) -> tuple[Any, Any]:
        """Layer ``index``'s keys and values over all positions (concatenated when in pieces)."""
        import torch

        if len(self.pieces) == 1:
            return self.pieces[0][index]
        return (
            torch.cat([piece[index][0] for piece in self.pieces], dim=2),
            torch.cat([piece[index][1] for piece in self.pieces], dim=2),
        )


@dataclass
class Sampled:
    """One row's reply and what the loss step needs to score it again."""

    reply: list[int]
    """The sampled token ids (up to and including the end-of-turn token, if reached)."""
    prefix: Keys
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


def left_stacked(prefixes: list[Keys]) -> tuple[Any, Any, list[int]]:
    """One batch cache of the rows' prefixes, right-aligned (masked padding on the left: the
    positions were applied when the keys were computed, so padding shifts nothing); returns
    (cache, attention mask, lengths)."""
    import torch

    lengths = [p.length for p in prefixes]
    width = max(lengths)
    mask = torch.zeros((len(prefixes), width), dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, width - n :] = 1
    return _cache(_stacked(prefixes, lengths, width)), mask, lengths


def _stacked(prefixes: list[Keys | None], lengths: list[int], width: int) -> KV:
    """Per-row keys/values as one batch, each row right-aligned in ``width`` positions (a row
    of length 0 is all padding)."""
    first = next(p for p, n in zip(prefixes, lengths, strict=True) if n).pieces[0]
    layers = []
    for layer, (k0, v0) in enumerate(first):
        keys = k0.new_zeros((len(prefixes), k0.shape[1], width, k0.shape[3]))
        values = v0.new_zeros((len(prefixes), v0.shape[1], width, v0.shape[3]))
        for row, (prefix, n) in enumerate(zip(prefixes, lengths, strict=True)):
            at = width - n
            for piece in prefix.pieces if n else ():
                k, v = piece[layer]
                keys[row, :, at : at + k.shape[2]] = k[0]
                values[row, :, at : at + v.shape[2]] = v[0]
                at += k.shape[2]
        layers.append((keys, values))
    return layers


GROUP_TOKENS = 640
"""Padded tokens per prefill forward pass: on two cores, 8 prompt rests of 73 tokens take 1.5 s
together and 3.0 s one at a time (small matrix products use the cores badly)."""
MIN_SHARED = 16
"""Below this many tokens a prefix all heads share is not prefilled on its own."""


class PrefixStore:
    """Prefilled prompt heads of one rollout batch, so a new prompt runs only past the longest
    head it shares with one of them (the rules and the instruction of a group's episodes, the
    actions two episodes took alike)."""

    def __init__(self) -> None:
        self.heads: list[tuple[list[int], Keys]] = []

    def longest(self, head: list[int]) -> tuple[int, Keys | None]:
        """The longest stored prefix of ``head`` (leaving at least its last token to run)."""
        shared, reuse = 0, None
        for tokens, kv in self.heads:
            n = _common(tokens, head)
            if n > shared:
                shared, reuse = n, kv
        return min(shared, len(head) - 1), reuse

    def prefill(self, model: Any, head: list[int]) -> Keys:
        """Keys/values of ``head``, computed past the longest prefix already stored."""
        return self.prefill_many(model, [head])[0]

    def prefill_many(self, model: Any, heads: list[list[int]]) -> list[Keys]:
        """Keys/values of each head: a prefix all of them share runs once, then each head's
        rest past its longest stored prefix, in groups of similar length (one forward pass a
        group, each row at its own positions over its own prefix)."""
        shared = _shared(heads)
        if (
            len(heads) > 1
            and shared >= MIN_SHARED
            and self.longest(heads[0][:shared])[0] < shared - 1
        ):
            self.prefill(model, heads[0][:shared])
        plans = [self.longest(head) for head in heads]
        order = sorted(range(len(heads)), key=lambda i: len(heads[i]) - plans[i][0])
        out: list[Any] = [None] * len(heads)
        group: list[int] = []
        for i in [*order, None]:
            if i is not None:
                rest = len(heads[i]) - plans[i][0]
                if not group or (len(group) + 1) * rest <= GROUP_TOKENS:
                    group.append(i)
                    continue
            kvs = _prefill_group(model, [heads[j] for j in group], [plans[j] for j in group])
            for j, kv in zip(group, kvs, strict=True):
                self.heads.append((heads[j], kv))
                out[j] = kv
            group = [i] if i is not None else []
        return out


def _prefill_group(
    model: Any, heads: list[list[int]], plans: list[tuple[int, Keys | None]]
) -> list[Keys]:
    """One forward pass over several heads' rests, each over its own stored prefix; row ``i``
    is ``[padding][prefix i][padding][rest i]`` (padding masked), so its keys and values are
    those of the head prefilled alone: the stored prefix's pieces, then the rest's (copied out
    of the batch, which is freed)."""
    import torch

    device = model.device
    starts = [n for n, _ in plans]
    rests = [head[n:] for head, n in zip(heads, starts, strict=True)]
    size, width, span = len(heads), max(starts), max(len(r) for r in rests)
    ids = torch.zeros((size, span), dtype=torch.long)
    positions = torch.zeros((size, span), dtype=torch.long)
    mask = torch.zeros((size, width + span), dtype=torch.long)
    for row, (rest, start) in enumerate(zip(rests, starts, strict=True)):
        ids[row, span - len(rest) :] = torch.tensor(rest)
        positions[row, : span - len(rest)] = start
        positions[row, span - len(rest) :] = torch.arange(start, start + len(rest))
        mask[row, width - start : width] = 1
        mask[row, width + span - len(rest) :] = 1
    prefixes = [keys.head(n) if n and keys is not None else Keys(()) for n, keys in plans]
    past = _cache(_stacked(prefixes, starts, width)) if width else None
    out = model(
        input_ids=ids.to(device),
        attention_mask=mask.to(device),
        position_ids=positions.to(device),
        **cache_arg(model, past),
        use_cache=True,
        logits_to_keep=1,
    )
    layers = _layers(cache_of(out))
    return [
        prefix.then(
            [
                (k[row : row + 1, :, width + span - len(rest) :].clone(),
                 v[row : row + 1, :, width + span - len(rest) :].clone())
                for k, v in layers
            ]
        )
        for row, (rest, prefix) in enumerate(zip(rests, prefixes, strict=True))
    ]  # fmt: skip


def _shared(rows: list[list[int]]) -> int:
    """Tokens every row starts with (lexicographic extremes bound the set's common prefix)."""
    return _common(min(rows), max(rows)) if rows else 0


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
    stop_tokens: frozenset[int] = frozenset(),
) -> list[Sampled]:
    """Sample one reply per prompt (greedy at ``temperature`` 0), prefilling each distinct
    prompt once, past what ``store`` already holds; every row keeps its prompt's prefix
    keys/values for :func:`cached_logprobs`. A reply ends with ``eos`` or with any of
    ``stop_tokens`` (kept, as ``eos`` is)."""
    import torch

    device = model.device
    store = store if store is not None else PrefixStore()
    distinct: dict[tuple[int, ...], int] = {}
    for prompt in prompts:
        if len(prompt) < 2:
            raise ValueError("every prompt needs at least two tokens")
        distinct.setdefault(tuple(prompt), len(distinct))
    with torch.no_grad():  # prompt[:-1]: the prefix is kept without slicing
        prefixes = store.prefill_many(model, [list(prompt[:-1]) for prompt in distinct])
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
                    live[row] = token != eos and token not in stop_tokens
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
