"""The prefix-reusing CPU decoder: same tokens as plain generation, less prefill."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_evaluator_rollout.prefix_decoding import (
    MIN_PREFIX,
    KVStore,
    PrefixCachedDecoder,
    common_prefix_length,
    supports_prefix_cache,
)
from autorl_hf.generation import encode

RULES = "You count things. Reply with one number and nothing else. " * 4


def chats(turns: int) -> list[list[dict[str, str]]]:
    """Episode-like prompts: a shared rules prefix, then histories of different lengths."""
    prompts = []
    for episode, (a, b) in enumerate([(2, 3), (4, 5), (12, 30), (7, 1)]):
        messages = [{"role": "user", "content": f"{RULES}\nWhat is {a} + {b}?"}]
        for turn in range(turns if episode % 2 else 0):
            messages += [
                {"role": "assistant", "content": str(a + b + turn)},
                {"role": "user", "content": f"What is {a + turn} + {b}?"},
            ]
        prompts.append(messages)
    return prompts


@pytest.fixture(scope="module")
def generator(tiny_model_dir: Path):
    from autorl_hf.generation import Generator

    return Generator(tiny_model_dir, device="cpu", backend="transformers")


def test_common_prefix_length() -> None:
    assert common_prefix_length([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix_length([1, 2], [1, 2, 3]) == 2
    assert common_prefix_length([], [1]) == 0
    assert common_prefix_length([5], [6]) == 0


def test_the_store_reuses_the_longest_prefix_and_keeps_its_budget() -> None:
    import torch

    def kv(n: int) -> list:
        return [(torch.zeros(1, 1, n, 2), torch.zeros(1, 1, n, 2))]  # 16 bytes per token

    store = KVStore(max_bytes=16 * 80)
    base = list(range(40))
    store.add(base, kv(40))
    n, reused = store.longest([*base[:30], 99, 98], limit=31)
    assert n == 30 and reused[0][0].shape[2] == 30
    assert store.longest(base[: MIN_PREFIX - 1] + [7] * 20, limit=50) == (0, [])
    assert store.longest(base, limit=39)[0] == 39  # a prompt keeps at least one token to run
    store.add([*base, 1, 2], kv(42))  # extends the first entry, which is dropped
    assert len(store.entries) == 1
    store.add(list(range(100, 150)), kv(50))  # over the budget: the least recently used goes
    assert [len(e.tokens) for e in store.entries] == [50]


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_same_tokens_as_plain_generation(generator) -> None:
    assert supports_prefix_cache(generator.model)
    decoder = PrefixCachedDecoder(generator.model, generator.tokenizer)
    prompts = chats(turns=2)
    plain = generator.completions(prompts, max_new_tokens=12, batch_size=4)
    batched = decoder.completions(prompts, max_new_tokens=12, batch_size=4)
    assert decoder.prompt_tokens_reused > 0  # the rules were prefilled once, not four times
    one_by_one = decoder.completions(prompts, max_new_tokens=12, batch_size=1)
    assert batched == plain and one_by_one == plain
    # the next turn of each episode reuses its whole previous prompt
    computed = decoder.prompt_tokens_computed
    longer = chats(turns=3)
    assert decoder.completions(longer, max_new_tokens=12) == generator.completions(
        longer, max_new_tokens=12
    )
    total = sum(len(encode(generator.tokenizer, p)) for p in longer)
    assert decoder.prompt_tokens_computed - computed < 0.2 * total


def test_stop_strings_and_seeded_sampling(generator) -> None:
    decoder = PrefixCachedDecoder(generator.model, generator.tokenizer)
    prompts = chats(turns=1)
    plain = generator.completions(prompts, max_new_tokens=16, stop=["\n"])
    mine = decoder.completions(prompts, max_new_tokens=16, stop=["\n"])
    assert [c.text for c in mine] == [c.text for c in plain]
    assert all("\n" not in c.text for c in mine)
    sampled = [
        decoder.completions(prompts, max_new_tokens=8, temperature=1.0, seed=s) for s in (1, 1, 2)
    ]
    assert sampled[0] == sampled[1] and sampled[0] != sampled[2]
