"""Batched decoding that never prefills the same prompt prefix twice (CPU, transformers).

An interactive evaluation sends, for every step of every episode, a prompt that starts with the
same rules and worked example and then repeats the episode's history: turn t+1's prompt is turn
t's prompt plus the action taken and the new observation. Plain batched generation prefills all
of it again every turn, and on a CPU the prefill dominates. Here the keys and values of every
prompt are kept (a :class:`KVStore` with a byte budget); a new prompt reuses the longest stored
prefix it shares (the rules for a new episode, the whole previous prompt of an ongoing one) and
prefills only the rest, alone (no compute spent on padding, whatever the spread of prompt
lengths in a lockstep turn). The rows' caches are then stacked, right-aligned with masked padding
on the left, for one batched decoding loop:

    row i:  [padding] [prompt i: reused prefix + prefilled rest] [generated...]

Rotary positions are applied when keys are computed, so the padding shifts nothing. Greedy
decoding gives the tokens of plain generation (up to float rounding); a test compares both.
vLLM does the same on a GPU on its own (automatic prefix caching), so this is the CPU path only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autorl_hf.generation import (
    Completion,
    Prompt,
    cache_arg,
    cache_of,
    cut_at_stop,
    encode,
    eos_ids,
)
from autorl_hf.loading import retune_threads

MIN_PREFIX = 16
"""Below this many shared tokens a stored prefix is not worth its bookkeeping."""
GROUP_TOKENS = 640
"""Padded tokens per prefill forward pass: enough rows for the matrix products to use the
cores well (~2.5 ms a token for SmolLM2-135M on two cores, against ~5 at 73 tokens alone)."""
DEFAULT_CACHE_BYTES = 2 * 1024**3
"""Keys/values kept between calls (tiny model: ~2 KB per token; SmolLM2-135M: ~90 KB)."""


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest token prefix ``a`` and ``b`` share."""
    import numpy as np

    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.asarray(a[:n]) != np.asarray(b[:n])
    return int(differ.argmax()) if differ.any() else n


def supports_prefix_cache(model: Any) -> bool:
    """Full attention everywhere (no sliding window, no recurrent layers) and a transformers
    with ``DynamicCache``."""
    try:
        from transformers import DynamicCache  # noqa: F401
    except ImportError:
        return False
    config = model.config
    if getattr(config, "use_sliding_window", False) and getattr(config, "sliding_window", None):
        return False
    layer_types = getattr(config, "layer_types", None) or ["full_attention"]
    return all(t == "full_attention" for t in layer_types)


def _layers_kv(cache: Any) -> list[tuple[Any, Any]]:
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache, strict=True))  # transformers 4.x


def _cache_from(kv: list[tuple[Any, Any]]) -> Any:
    from transformers import DynamicCache

    if hasattr(DynamicCache, "from_legacy_cache"):  # transformers 4.x
        return DynamicCache.from_legacy_cache(tuple(kv))
    return DynamicCache(kv)


def _groups(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Consecutive indices of ``lengths`` (sorted ascending) grouped so that a group's padded
    size (its rows times its longest) stays within ``budget`` tokens; a longer row is alone."""
    groups: list[list[int]] = []
    for i, n in enumerate(lengths):
        if groups and (len(groups[-1]) + 1) * max(n, 1) <= budget:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _left_stacked(
    prefixes: list[list[tuple[Any, Any]]], lengths: list[int], width: int, device: Any
) -> list[tuple[Any, Any]]:
    """Per-row keys/values (batch of one each, ``lengths[i]`` long) as one batch, each row
    right-aligned in ``width`` positions (rows without a prefix are all padding)."""

    first = next(kv for kv, n in zip(prefixes, lengths, strict=True) if n)
    layers = []
    for layer, (k0, v0) in enumerate(first):
        keys = k0.new_zeros((len(prefixes), k0.shape[1], width, k0.shape[3]))
        values = v0.new_zeros((len(prefixes), v0.shape[1], width, v0.shape[3]))
        for i, (kv, n) in enumerate(zip(prefixes, lengths, strict=True)):
            if n:
                keys[i, :, width - n :] = kv[layer][0][0]
                values[i, :, width - n :] = kv[layer][1][0]
        layers.append((keys.to(device), values.to(device)))
    return layers


@dataclass
class _Entry:
    tokens: list[int]
    kv: list[tuple[Any, Any]]
    nbytes: int
    used: int


@dataclass
class KVStore:
    """Keys/values of recent prompts (batch of one each), least recently used evicted first."""

    max_bytes: int = DEFAULT_CACHE_BYTES
    entries: list[_Entry] = field(default_factory=list)
    clock: int = 0

    def longest(self, tokens: Sequence[int], limit: int) -> tuple[int, list[tuple[Any, Any]]]:
        """The longest stored prefix of ``tokens`` (at most ``limit``) and its keys/values."""
        best, found = 0, None
        for entry in self.entries:
            n = min(common_prefix_length(entry.tokens, tokens), limit)
            if n > best:
                best, found = n, entry
        if found is None or best < MIN_PREFIX:
            return 0, []
        self.clock += 1
        found.used = self.clock
        return best, [(k[:, :, :best], v[:, :, :best]) for k, v in found.kv]

    def add(self, tokens: list[int], kv: list[tuple[Any, Any]]) -> None:
        """Store ``tokens``' keys/values; an entry it extends is dropped (it is covered)."""
        nbytes = sum(k.element_size() * k.nelement() * 2 for k, _ in kv)
        if nbytes > self.max_bytes:
            return
        self.entries = [
            e
            for e in self.entries
            if not (len(e.tokens) <= len(tokens) and tokens[: len(e.tokens)] == e.tokens)
        ]
        self.clock += 1
        self.entries.append(_Entry(tokens, kv, nbytes, self.clock))
        while sum(e.nbytes for e in self.entries) > self.max_bytes:
            self.entries.remove(min(self.entries, key=lambda e: e.used))


class PrefixCachedDecoder:
    """Greedy (or temperature) decoding of a batch of prompts, reusing stored prompt prefixes."""

    def __init__(self, model: Any, tokenizer: Any, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.eos = eos_ids(model, tokenizer)
        self.pad_id = tokenizer.pad_token_id
        if self.pad_id is None:
            raise ValueError("the tokenizer has no pad token (load it with autorl_hf.loading)")
        self.device = next(model.parameters()).device
        self.store = KVStore(max_bytes)
        self.prompt_tokens_reused = 0
        self.prompt_tokens_computed = 0
        self.positions_run = 0
        """Token positions the model ran (prefill with its padding, and every decoding row)."""
        self.head_positions = 0
        """Positions that went through the language-model head (one per prompt, per decoded row)."""

    def completions(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int,
        batch_size: int = 16,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        seed: int = 0,
    ) -> list[Completion]:
        """One completion per prompt, in input order (batches of ``batch_size``)."""
        import torch

        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        encoded = [encode(self.tokenizer, p) for p in prompts]
        if any(not ids for ids in encoded):
            raise ValueError("a prompt is empty after tokenization: nothing to continue")
        generator = torch.Generator(device="cpu").manual_seed(seed)
        out: list[Completion] = []
        for start in range(0, len(encoded), max(1, batch_size)):
            if self.model.device.type == "cpu":
                retune_threads(self.model.num_parameters())
            batch = encoded[start : start + max(1, batch_size)]
            out += self._batch(batch, max_new_tokens, temperature, stop, generator)
        return out

    # -- one batch ----------------------------------------------------------------------------

    def _batch(
        self,
        rows: list[list[int]],
        max_new_tokens: int,
        temperature: float,
        stop: Sequence[str],
        generator: Any,
    ) -> list[Completion]:
        import torch

        with torch.inference_mode():
            logits, row_kv = self._prefill_rows(rows)
            lengths = [len(r) for r in rows]
            cache, mask = self._stack(row_kv, lengths, max_new_tokens)
            width = mask.shape[1]
            next_pos = torch.tensor(lengths, dtype=torch.long)
            last_logits = torch.cat(logits, dim=0)
            size = len(rows)
            generated: list[list[int]] = [[] for _ in rows]
            finish = ["length"] * size
            running = list(range(size))
            for step in range(max_new_tokens):
                tokens = self._pick(last_logits, temperature, generator).tolist()
                for i in running:
                    generated[i].append(tokens[i])
                running = [i for i in running if not self._ended(i, generated, finish, stop)]
                if not running or step == max_new_tokens - 1:
                    break
                fed = torch.tensor(
                    [[t if i in running else self.pad_id] for i, t in enumerate(tokens)],
                    dtype=torch.long,
                )
                mask = torch.cat([mask, torch.ones((size, 1), dtype=torch.long)], dim=1)
                output = self.model(
                    input_ids=fed.to(self.device),
                    attention_mask=mask.to(self.device),
                    position_ids=next_pos[:, None].to(self.device),
                    cache_position=torch.tensor([width + step], device=self.device),
                    **cache_arg(self.model, cache),
                    use_cache=True,
                )
                cache = cache_of(output)
                last_logits = output.logits[:, -1, :]
                next_pos = next_pos + 1
                self.positions_run += size
                self.head_positions += size
        return [self._completion(g, f, stop) for g, f in zip(generated, finish, strict=True)]

    def _prefill_rows(self, rows: list[list[int]]) -> tuple[list[Any], list[Any]]:
        """Each row's logits after its prompt and its keys/values, in row order.

        A prefix every row shares (the rules, on an evaluation's first turn) is prefilled once;
        then each row runs only what no stored prompt covers, in groups of rows with similar
        lengths (one forward pass per group: on two cores, 8 rows of 73 tokens take 1.5 s
        together and 3.0 s one at a time, as small matrix products use the cores badly)."""
        self._store_shared_prefix(rows)
        plans = [self.store.longest(row, len(row) - 1) for row in rows]
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]) - plans[i][0])
        logits: list[Any] = [None] * len(rows)
        row_kv: list[Any] = [None] * len(rows)
        for group in _groups([len(rows[i]) - plans[i][0] for i in order], GROUP_TOKENS):
            members = [order[j] for j in group]
            lasts, kvs = self._prefill_group(
                [rows[i][plans[i][0] :] for i in members],
                [plans[i][0] for i in members],
                [plans[i][1] for i in members],
            )
            for i, last, kv in zip(members, lasts, kvs, strict=True):
                self.store.add(rows[i], kv)
                self.prompt_tokens_reused += plans[i][0]
                self.prompt_tokens_computed += len(rows[i]) - plans[i][0]
                logits[i], row_kv[i] = last, kv
        return logits, row_kv

    def _store_shared_prefix(self, rows: list[list[int]]) -> None:
        """Prefill once, and store, the prefix all rows share when no stored prompt covers it
        (otherwise every row of the first group would compute it again)."""
        if len(rows) < 2:
            return
        shared = common_prefix_length(min(rows), max(rows))  # lexicographic: the set's prefix
        shared = min(shared, min(len(r) for r in rows) - 1)
        if shared < MIN_PREFIX:
            return
        head = rows[0][:shared]
        reused, prefix_kv = self.store.longest(head, shared)
        if reused >= shared:
            return
        _lasts, kvs = self._prefill_group([head[reused:]], [reused], [prefix_kv])
        self.store.add(head, kvs[0])
        self.prompt_tokens_computed += shared - reused

    def _prefill_group(
        self, suffixes: list[list[int]], starts: list[int], prefixes: list[list[tuple[Any, Any]]]
    ) -> tuple[list[Any], list[list[tuple[Any, Any]]]]:
        """One forward pass over several rows' unprefilled rests, each over its own stored
        prefix. Row i of the batch is laid out as::

            [padding] [stored prefix i] [padding] [rest i]

        (prefixes left-padded to the longest, rests left-padded to the longest, padding
        masked), so the last position of every row is its prompt's last token and only it goes
        through the language-model head (``logits_to_keep=1``: SmolLM2's 49k x 576 head over
        every prompt token is a fifth of a prefill's work). Positions are the rows' own, so
        each row's keys equal those of a prefill alone (a test compares the tokens)."""
        import torch

        size = len(suffixes)
        width, rest = max(starts), max(len(s) for s in suffixes)
        ids = torch.full((size, rest), self.pad_id, dtype=torch.long)
        positions = torch.zeros((size, rest), dtype=torch.long)
        mask = torch.zeros((size, width + rest), dtype=torch.long)
        for i, (suffix, start) in enumerate(zip(suffixes, starts, strict=True)):
            n = len(suffix)
            ids[i, rest - n :] = torch.tensor(suffix, dtype=torch.long)
            positions[i, : rest - n] = start
            positions[i, rest - n :] = torch.arange(start, start + n)
            mask[i, width - start : width] = 1
            mask[i, width + rest - n :] = 1
        cache = None
        if width:
            cache = _cache_from(_left_stacked(prefixes, starts, width, self.device))
        output = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=positions.to(self.device),
            **cache_arg(self.model, cache),
            use_cache=True,
            logits_to_keep=1,
        )
        self.positions_run += size * rest
        self.head_positions += size
        layers = _layers_kv(cache_of(output))
        kvs = []
        for i, (suffix, start) in enumerate(zip(suffixes, starts, strict=True)):
            keep = [*range(width - start, width), *range(width + rest - len(suffix), width + rest)]
            index = torch.tensor(keep, device=self.device)
            kvs.append(
                [
                    (k[i : i + 1].index_select(2, index), v[i : i + 1].index_select(2, index))
                    for k, v in layers
                ]
            )
        last = output.logits[:, -1, :]
        return [last[i : i + 1] for i in range(size)], kvs

    def _stack(
        self, row_kv: list[list[tuple[Any, Any]]], lengths: list[int], room: int
    ) -> tuple[Any, Any]:
        """One batch cache with ``room`` free positions: each row's keys/values right-aligned,
        masked padding on the left (positions were applied when the keys were computed, so the
        padding shifts nothing). A preallocated cache written in place where transformers has
        one: appending to a growing cache copies every row's keys each step, which on a CPU cost
        as much as the attention itself (45 vs 30 ms a step, batch 8, 1,500 tokens)."""
        import torch

        size, width = len(row_kv), max(lengths)
        mask = torch.zeros((size, width), dtype=torch.long)
        layers = _left_stacked(row_kv, lengths, width, self.device)
        for i, n in enumerate(lengths):
            mask[i, width - n :] = 1
        return self._preallocated(layers, width + room) or _cache_from(layers), mask

    def _preallocated(self, layers: list[tuple[Any, Any]], length: int) -> Any:
        """A transformers ``StaticCache`` of ``length`` positions holding ``layers``, so that
        decoding writes in place instead of growing the cache a token at a time; None where
        this transformers has no such cache for the model (the caller then uses a dynamic one)."""
        try:
            from transformers import StaticCache

            cache = StaticCache(config=self.model.config, max_cache_len=length)
            if len(cache.layers) != len(layers):
                return None
        except (ImportError, TypeError, ValueError, AttributeError):
            return None
        import torch

        width = layers[0][0].shape[2]
        positions = torch.arange(width, device=self.device)
        for layer, (keys, values) in zip(cache.layers, layers, strict=True):
            layer.update(keys, values, cache_kwargs={"cache_position": positions})
        return cache

    def _pick(self, logits: Any, temperature: float, generator: Any) -> Any:
        import torch

        if temperature <= 0:
            return logits.argmax(dim=-1)
        probs = torch.softmax(logits.float() / temperature, dim=-1).cpu()
        return torch.multinomial(probs, 1, generator=generator)[:, 0]

    def _ended(
        self, i: int, generated: list[list[int]], finish: list[str], stop: Sequence[str]
    ) -> bool:
        if generated[i][-1] in self.eos:
            finish[i] = "eos"
            return True
        if stop:
            text = self.tokenizer.decode(generated[i], skip_special_tokens=True)
            if cut_at_stop(text, stop)[1]:
                finish[i] = "stop"
                return True
        return False

    def _completion(self, row: list[int], finish: str, stop: Sequence[str]) -> Completion:
        kept = row[:-1] if finish == "eos" else row
        text, stopped = cut_at_stop(self.tokenizer.decode(kept, skip_special_tokens=True), stop)
        return Completion(text=text, tokens=len(row), finish="stop" if stopped else finish)
