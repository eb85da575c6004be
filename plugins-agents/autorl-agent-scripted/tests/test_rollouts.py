"""Rollout sampling that keeps each prompt's keys/values (``rollouts``), on the tiny model: the
replies are what a plain decoding gives, and the kept keys/values score them as a fresh forward
pass does."""

from __future__ import annotations

from pathlib import Path

import pytest


def _prompts() -> list[list[int]]:
    rules = list(range(40, 70))  # 30 tokens every prompt starts with
    return [
        [*rules, 5, 6, 7, 8],
        [*rules, 5, 6, 7, 8],  # the same prompt twice: prefilled once
        [*rules, 9, 10],
        [*rules[:12], 11, 12, 13, 14, 15, 16],
    ]


def test_greedy_replies_match_a_plain_decoding_of_each_prompt(webshop_workspace: Path) -> None:
    import rollouts
    import torch
    from recipe_common import load_base

    model, tokenizer = load_base(webshop_workspace / "models" / "base")
    model.eval()
    store = rollouts.PrefixStore()
    eos = tokenizer.eos_token_id
    got = rollouts.sample(model, _prompts(), eos=eos, temperature=0, max_new_tokens=6, store=store)
    assert len(store.heads) == 3  # the repeated prompt ran once
    assert got[0].prefix is got[1].prefix
    for prompt, row in zip(_prompts(), got, strict=True):
        ids = list(prompt)
        with torch.no_grad():
            for _ in range(6):
                token = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
                ids.append(token)
                if token == eos:
                    break
        assert row.reply == ids[len(prompt) :]
        assert row.last == prompt[-1] and row.prefix.length == len(prompt) - 1


def test_kept_keys_and_values_score_replies_as_a_fresh_forward(webshop_workspace: Path) -> None:
    import interactive
    import rollouts
    import torch
    from recipe_common import load_base

    model, tokenizer = load_base(webshop_workspace / "models" / "base")
    model.eval()
    torch.manual_seed(0)
    got = rollouts.sample(
        model, _prompts(), eos=tokenizer.eos_token_id, temperature=1.0, max_new_tokens=5
    )
    with torch.no_grad():
        kept = rollouts.cached_logprobs(model, got)
        fresh = interactive.action_logprobs(
            model, [(p, g.reply) for p, g in zip(_prompts(), got, strict=True)]
        )
    assert kept.tolist() == pytest.approx(fresh.tolist(), abs=1e-4)


def test_policy_step_on_kept_turns_favours_the_better_episode(webshop_workspace: Path) -> None:
    """Two iterations (the second clipped to the sampling policy) on a group where episode 0
    beat episode 1: the policy now gives episode 0's actions more probability, relative to
    episode 1's, than before (scored by fresh forward passes)."""
    import autorl_kit as kit
    import interactive
    import torch
    from recipe_common import load_base

    model, tokenizer = load_base(webshop_workspace / "models" / "base")
    torch.manual_seed(0)
    episodes = interactive.play(
        model, tokenizer, kit, kit.train_ids()[:1], group_size=2, temperature=1.0,
        max_new_tokens=6, max_steps=2,
    )  # fmt: skip
    assert all(len(e.kept) == len(e.turns) for e in episodes)

    def margin() -> float:
        with torch.no_grad():
            good, bad = (interactive.action_logprobs(model, e.turns).mean() for e in episodes)
        return float(good - bad)

    before = margin()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    trained = interactive.policy_loss_step(model, optimizer, episodes, [1.0, -1.0], iterations=2)
    assert trained == sum(len(e.turns) for e in episodes)
    assert margin() > before


def test_prefill_in_groups_gives_each_head_its_own_keys_and_values(webshop_workspace: Path) -> None:
    """Heads of different lengths, some over stored prefixes and some not, prefilled together
    (padding between prefix and rest) hold the keys/values of each head run alone."""
    import rollouts
    import torch
    from recipe_common import load_base

    model, _ = load_base(webshop_workspace / "models" / "base")
    model.eval()
    rules = list(range(40, 70))
    store = rollouts.PrefixStore()
    with torch.no_grad():
        store.prefill(model, [*rules, 3, 4, 5])
        heads = [
            [*rules, 3, 4, 5, 6, 7],
            [*rules, 9],
            [*rules[:10], 8, 8, 8, 8, 8, 8, 8, 8],
            [1, 2],
        ]
        grouped = store.prefill_many(model, heads)
        for head, kv in zip(heads, grouped, strict=True):
            alone = rollouts._layers(rollouts.cache_of(model(input_ids=torch.tensor([head]))))
            assert kv.length == len(head)
            for layer, (k1, v1) in enumerate(alone):
                k, v = kv.layer(layer)
                assert torch.allclose(k, k1, atol=1e-4) and torch.allclose(v, v1, atol=1e-4)


def test_a_prompt_keeps_only_its_new_positions(webshop_workspace: Path) -> None:
    """A turn's prompt extends the last one: its kept keys/values hold the last prompt's by
    reference and copy only the new positions (kept whole, a GRPO batch of ALFWorld episodes
    grew past 14 GB); scored from the pieces, the replies get a fresh forward's
    log-probabilities."""
    import interactive
    import rollouts
    import torch
    from recipe_common import load_base

    model, tokenizer = load_base(webshop_workspace / "models" / "base")
    model.eval()
    store = rollouts.PrefixStore()
    first = [*range(40, 90), 5, 6]
    later = [*first, 7, 8, 9, 10, 11]  # the next turn of the same episode
    branch = [*first[:-2], 12, 13, 14]  # another action after the same first 50 tokens
    batches = [[first, first], [later, branch]]
    rows = []
    for prompts in batches:
        rows += rollouts.sample(
            model, prompts, eos=tokenizer.eos_token_id, temperature=0, max_new_tokens=4, store=store
        )
    kept_first, grown, branched = rows[0].prefix, rows[2].prefix, rows[3].prefix
    assert grown.pieces[0] is kept_first.pieces[0]  # held by reference, not copied
    assert [p[0][0].shape[2] for p in grown.pieces] == [len(first) - 1, len(later) - len(first)]
    assert branched.length == len(branch) - 1 and branched.pieces[-1][0][0].shape[2] == 2
    assert branched.pieces[0][0][0].data_ptr() == kept_first.pieces[0][0][0].data_ptr()
    pairs = [(p, r.reply) for p, r in zip([p for b in batches for p in b], rows, strict=True)]
    with torch.no_grad():
        kept = rollouts.cached_logprobs(model, rows)
        fresh = interactive.action_logprobs(model, pairs)
    assert kept.tolist() == pytest.approx(fresh.tolist(), abs=1e-4)
