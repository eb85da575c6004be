"""The interactive recipe (SFT warm-up on the expert, online GRPO) on the tiny model and the
real WebShop environment of the kit."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_expert_rows_are_the_graders_prompts_with_the_experts_actions(
    webshop_workspace: Path,
) -> None:
    import autorl_kit as kit
    import interactive

    ids = kit.train_ids()[:3]
    rows, episodes = interactive.expert_rows(kit, ids)
    assert episodes == 3
    first = kit.expert_episode(ids[0])
    assert rows[0]["prompt"] == first["steps"][0]["messages"]
    assert rows[0]["completion"] == [{"role": "assistant", "content": first["steps"][0]["action"]}]
    assert rows[len(first["steps"]) - 1]["completion"][0]["content"] == "click[buy now]"
    assert len(rows) == sum(len(kit.expert_episode(i)["steps"]) for i in ids)


def test_advantages_are_normalised_within_each_group(common_helpers: Path) -> None:
    import interactive

    def episode(group: int, reward: float) -> interactive.Episode:
        return interactive.Episode("s", group, None, ["o"], reward=reward)

    eps = [episode(0, 1.0), episode(0, 0.0), episode(1, 0.5), episode(1, 0.5)]
    advs = interactive.advantages(eps)
    # (r - mean) / sample std: +-0.5 / sqrt(0.5), TRL's GRPO scale
    assert advs[0] == pytest.approx(0.5**0.5, abs=1e-3) and advs[1] == pytest.approx(
        -(0.5**0.5), abs=1e-3
    )
    assert advs[2:] == [0.0, 0.0]  # a group that scored alike carries no signal


def test_a_step_drops_batches_without_signal_and_keeps_within_its_time(
    common_helpers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dynamic sampling: a batch whose groups all scored alike is dropped (not merged: groups
    are numbered within a batch, so two sessions' episodes would form one group), another is
    played, and no further batch starts once one more batch and the update would overrun."""
    import argparse
    import random
    import time

    import interactive

    rewards = iter([[1.0] * 4, [0.0] * 4, [1.0, 0.0, 1.0, 1.0], [0.5] * 4])
    played: list[list[str]] = []

    def fake_play(model, tokenizer, kit, chosen, **_: object) -> list:
        played.append(list(chosen))
        return [interactive.Episode(chosen[0], 0, None, ["o"], reward=r) for r in next(rewards)]

    monkeypatch.setattr(interactive, "play", fake_play)
    args = argparse.Namespace(grpo_sessions=1, grpo_group=4, grpo_temperature=1.0, max_new_tokens=8)
    sessions = [f"s{i}" for i in range(10)]
    far = time.monotonic() + 3600
    episodes, _ = interactive.signal_groups(
        None, None, None, sessions, random.Random(0), args, far, None
    )
    assert len(played) == 3 and len({s for (s,) in played}) == 3  # three sessions, no repeat
    assert [e.reward for e in episodes] == [1.0, 0.0, 1.0, 1.0]  # only the batch with a signal
    assert {e.session_id for e in episodes} == {played[-1][0]} and any(
        interactive.advantages(episodes)
    )
    # no time for another batch plus the update: the signal-less batch is returned as it is
    episodes, _ = interactive.signal_groups(
        None, None, None, sessions, random.Random(0), args, time.monotonic() + 1.0, 30.0
    )
    assert len(played) == 4 and not any(interactive.advantages(episodes))


@pytest.mark.slow  # over 1.5 CPU-s: make test, not make check
def test_play_runs_lockstep_episodes_in_the_kit_env(webshop_workspace: Path) -> None:
    import autorl_kit as kit
    import interactive
    from recipe_common import load_base

    model, tokenizer = load_base(webshop_workspace / "models" / "base")
    ids = kit.train_ids()[:2]
    episodes = interactive.play(
        model, tokenizer, kit, ids, group_size=2, temperature=1.0, max_new_tokens=8, max_steps=3
    )
    assert [e.session_id for e in episodes] == [ids[0], ids[0], ids[1], ids[1]]
    assert [e.group for e in episodes] == [0, 0, 1, 1]
    for e in episodes:
        assert e.done and 1 <= len(e.turns) <= 3 and len(e.observations) == len(e.actions) + 1
        prompt, reply = e.turns[0]
        text = tokenizer.decode(prompt)
        assert "Instruction:" in text and len(reply) <= 8


def test_policy_step_changes_only_with_signal(webshop_workspace: Path) -> None:
    import autorl_kit as kit
    import interactive
    import torch
    from recipe_common import load_base

    model, tokenizer = load_base(webshop_workspace / "models" / "base")
    episodes = interactive.play(
        model,
        tokenizer,
        kit,
        kit.train_ids()[:1],
        group_size=2,
        temperature=1.0,
        max_new_tokens=6,
        max_steps=2,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    before = [p.detach().clone() for p in model.parameters()]
    assert interactive.policy_loss_step(model, optimizer, episodes, [0.0, 0.0]) == 0
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    trained = interactive.policy_loss_step(model, optimizer, episodes, [1.0, -1.0])
    assert trained == sum(len(e.turns) for e in episodes)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


@pytest.mark.parametrize("detach_prompt", [False, True])
def test_action_logprobs_match_a_plain_forward(
    webshop_workspace: Path, detach_prompt: bool
) -> None:
    """Left padding, explicit positions, logits kept only at the end, and (``detach_prompt``)
    a shared prefix run once and the prompt run without gradient: the action tokens score
    exactly as a full forward of each pair alone."""
    import interactive
    import torch
    from recipe_common import load_base

    model, _ = load_base(webshop_workspace / "models" / "base")
    model.eval()
    rules = list(range(30, 50))  # 20 tokens every prompt shares: run once when detached
    pairs = [
        ([5, 6, 7, 8, 9, 10], [11, 12]),
        ([5, 6], [13, 14, 15]),
    ]
    shared = [([*rules, 7, 8, 9], [11, 12]), ([*rules, 6], [13, 14, 15]), (rules[:18], [16])]
    for batch in (pairs, shared):
        with torch.no_grad():
            batched = interactive.action_logprobs(model, batch, detach_prompt)
        for row, (prompt, action) in enumerate(batch):
            ids = torch.tensor([prompt + action])
            with torch.no_grad():
                logits = model(input_ids=ids).logits[0, :-1].float()
            logp = torch.log_softmax(logits, dim=-1)
            picked = logp[len(prompt) - 1 :, :].gather(-1, ids[0, len(prompt) :, None])
            assert batched[row].item() == pytest.approx(picked.mean().item(), abs=1e-4)


def test_detached_prompt_still_trains_every_layer(webshop_workspace: Path) -> None:
    """Without gradient through the prompt, the action positions still reach every layer."""
    import interactive
    from recipe_common import load_base

    model, _ = load_base(webshop_workspace / "models" / "base")
    pairs = [(list(range(30, 60)), [11, 12]), (list(range(30, 52)), [13])]
    (-interactive.action_logprobs(model, pairs, detach_prompt=True).mean()).backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    layers = [n for n in grads if ".layers." in n and n.endswith("q_proj.weight")]
    assert layers and all(grads[n] is not None and grads[n].abs().sum() > 0 for n in layers)


def test_length_batches_cover_every_pair_once_in_full_batches(common_helpers: Path) -> None:
    import interactive

    pairs = [([1] * n, [2]) for n in range(1, 40)]
    batches = interactive.length_batches(pairs, 4, seed=0)  # one window holds all 39
    flat = [i for b in batches for i in b]
    assert all(len(b) == 4 for b in batches) and len(set(flat)) == len(flat) == 36
    spread = [max(len(pairs[i][0]) for i in b) - min(len(pairs[i][0]) for i in b) for b in batches]
    assert max(spread) <= 6  # sorted within the window: a batch pads little
    assert interactive.length_batches(pairs, 4, seed=1) != batches  # reshuffled per epoch


def test_direct_demonstrations_buy_the_experts_product(webshop_workspace: Path) -> None:
    import autorl_kit as kit
    import interactive
    import recipe

    assert recipe.direct_actions(
        ["search[x]", "click[next >]", "click[b0abc]", "click[red]", "click[buy now]"]
    ) == ["search[x]", "click[next >]", "click[b0abc]", "click[buy now]"]
    for session_id in kit.train_ids()[:5]:
        expert = kit.expert_actions(session_id)
        episode = interactive.replay(kit, session_id, recipe.direct_actions(expert))
        assert [s["action"] for s in episode["steps"]] == recipe.direct_actions(expert)
        assert episode["success"] and episode["reward"] >= kit.SUCCESS_THRESHOLD
        first = kit.expert_episode(session_id)["steps"][0]["messages"]
        assert episode["steps"][0]["messages"] == first  # the grader's prompt format


@pytest.mark.e2e  # trains the tiny model
def test_action_sft_learns_the_experts_actions(webshop_workspace: Path) -> None:
    import autorl_kit as kit
    import interactive
    import torch
    from recipe_common import load_base

    model, tokenizer = load_base(webshop_workspace / "models" / "base")
    rows, _ = interactive.expert_rows(kit, kit.train_ids()[:2])
    pairs = interactive.tokenize_rows(tokenizer, rows)
    assert pairs[0][1][-1] == tokenizer.eos_token_id
    capped = interactive.tokenize_rows(tokenizer, rows, max_length=40)
    for (prompt, action), (short, same) in zip(pairs, capped, strict=True):
        assert same == action and len(short) + len(same) <= max(40, len(action) + 1)
        assert short == prompt[len(prompt) - len(short) :]  # the newest tokens are kept
    with torch.no_grad():
        before = interactive.action_logprobs(model, pairs).mean().item()
    args = interactive.parse_args(
        ["--mode", "full", "--sft-batch-size", "4", "--sft-lr", "1e-3", "--sft-epochs", "1"]
    )
    trained, steps = interactive.run_action_sft(model, tokenizer, rows * 3, args=args, seconds=120)
    assert steps == len(rows) * 3 // 4
    with torch.no_grad():
        after = interactive.action_logprobs(trained, pairs).mean().item()
    assert after > before + 0.5
