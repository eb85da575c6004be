"""The interactive (level 3) recipe: SFT warm-up on expert episodes, then GRPO on online rollouts.

The route of the paper's best ALFWorld run, sized to a CPU budget. It works for any task whose
workspace kit follows the kit contract (``make_env``, ``train_ids``, ``expert_episode``,
``build_messages``, ``extract_action``, ``HISTORY_WINDOW``; see docs/evaluators/rollout.md).
A kit whose grader prompt depends on the session, or is raw text, says so with
``grader_prompt(session_id, observations, actions)``, ``grader_action(reply)`` and
``grader_reply(action)`` (ALFWorld's reference prompt); the recipe then trains and samples in
that format (raw text: no chat template, replies end at a newline).

1. **SFT warm-up**: every step of the expert's episodes on train sessions becomes a
   prompt-completion pair in exactly the grader's prompt format; loss on the action only (a
   plain torch loop: see :func:`run_action_sft` for why not TRL); merge, save, submit.
2. **Online GRPO**: play groups of episodes in the kit's environment (one batched generation
   per turn across every live episode, sampled), score each episode with the environment's
   reward, and push up the log-probability of every action of an episode in proportion to its
   group-normalised advantage (episodes of the same session form a group). TRL's GRPOTrainer is
   single-turn (one completion per prompt, reward from a function): a multi-turn episode needs
   the environment between turns, so this loop is written here, on plain torch + PEFT.
   Save and submit after each GRPO phase.

Each phase gets a share of the budget read from ``GET /budget`` (``--sft-share`` for the
warm-up); training stops between steps at the phase's deadline; evaluations run on the grader
while the next phase trains: the shared loop of :func:`rounds.run_rounds`. A task's
``recipe.py`` calls :func:`main` with its kit, its flags and, optionally, its demonstrator.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recipe_common import StepTimes, group_advantages, log, merged, share_cores
from rollouts import (
    PrefixStore,
    Sampled,
    cache_arg,
    cache_of,
    cached_logprobs,
    sample,
    tail_logprobs,
)
from rounds import Run, even_share, recipe_parser, run_rounds
from training import lora_config


def parse_args(
    argv: list[str] | None = None,
    description: str = "",
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """The recipe's flags; a task's recipe adds its own through ``add_arguments``."""
    p = recipe_parser(description, margin=0.06)
    if add_arguments is not None:
        add_arguments(p)
    p.add_argument("--no-grpo", action="store_true", help="SFT warm-up only")
    p.add_argument(
        "--sft-share", type=float, default=0.8, help="share of the budget for the SFT warm-up"
    )
    p.add_argument("--sft-batch-size", type=int, default=4)
    p.add_argument(
        "--sft-epochs", type=int, default=3, help="passes over the SFT turns (if time allows)"
    )
    p.add_argument("--sft-lr", type=float, default=None, help="default 1e-3 LoRA, 5e-5 full")
    p.add_argument(
        "--sft-episodes",
        type=int,
        default=160,
        help="expert episodes for SFT (0: every train session); ~5 turns each, more than a "
        "CPU budget trains on, and each costs expert play and tokenizing",
    )
    p.add_argument("--max-length", type=int, default=768)
    p.add_argument("--grpo-sessions", type=int, default=4, help="sessions per GRPO step")
    p.add_argument("--grpo-group", type=int, default=4, help="episodes per session (a group)")
    p.add_argument("--grpo-lr", type=float, default=None, help="default 1e-4 LoRA, 1e-5 full")
    p.add_argument("--grpo-temperature", type=float, default=1.0)
    p.add_argument("--grpo-steps", type=int, default=20, help="cap on GRPO steps")
    p.add_argument(
        "--grpo-iterations",
        type=int,
        default=2,
        help="optimiser steps per batch of rollouts (the first is on-policy; later ones are "
        "clipped to the sampling policy)",
    )
    p.add_argument("--grpo-clip", type=float, default=0.2, help="clip range of the ratio")
    p.add_argument(
        "--rollout-engine",
        choices=("lockstep", "vllm"),
        default="lockstep",
        help="where GRPO's episodes are sampled: lockstep (this process, batched with prefix "
        "reuse) or vllm (a server from $AUTORL_VLLM_PYTHON serving each step's LoRA adapter; "
        "--mode lora only)",
    )
    p.add_argument("--max-new-tokens", type=int, default=32)
    return p.parse_args(argv)


# data ------------------------------------------------------------------------------------------


def expert_rows(
    kit: Any, session_ids: list[str], demonstration: Callable[[str], dict[str, Any]] | None = None
) -> tuple[list[dict[str, Any]], int]:
    """SFT rows (conversational prompt-completion) from successful demonstrations: the kit's
    expert (``kit.expert_episode``) unless the task's recipe passes its own ``demonstration``."""
    demonstrate = demonstration or kit.expert_episode
    rows: list[dict[str, Any]] = []
    episodes = 0
    for session_id in session_ids:
        episode = demonstrate(session_id)
        if not episode.get("success", episode.get("reward", 0) > 0):
            continue
        episodes += 1
        for step in episode["steps"]:
            rows.append(
                {
                    "prompt": step.get("prompt", step["messages"]),
                    "completion": [{"role": "assistant", "content": step["action"]}],
                }
            )
    return rows, episodes


def replay(kit: Any, session_id: str, actions: list[str]) -> dict[str, Any]:
    """Play ``actions`` in a kit environment: an episode in ``kit.expert_episode``'s shape,
    each step's ``messages`` exactly the grader's prompt before that action."""
    return demonstrate(
        kit, session_id, lambda _observations, taken: actions[len(taken)], len(actions)
    )


def demonstrate(
    kit: Any,
    session_id: str,
    policy: Callable[[list[str], list[str]], str],
    max_actions: int | None = None,
    max_steps: int | None = None,
) -> dict[str, Any]:
    """Play ``policy`` (observations so far, actions so far -> next action) in a kit
    environment until the episode ends (or after ``max_actions``): an episode in
    ``kit.expert_episode``'s shape, each step's ``messages`` exactly the grader's prompt
    before that action. ``max_steps`` overrides the grader's step limit (a step's prompt does
    not depend on it, so a demonstrator may finish where the grader would stop)."""
    env = kit.make_env(max_steps) if max_steps else kit.make_env()
    observation, _ = env.reset(session_id)
    observations, taken = [observation], []
    reward, info = 0.0, {}
    while max_actions is None or len(taken) < max_actions:
        action = policy(observations, taken)
        observation, reward, done, info = env.step(action)
        taken.append(action)
        observations.append(observation)
        if done:
            break
    success = info.get("success", reward >= getattr(kit, "SUCCESS_THRESHOLD", 1.0))
    return {
        "session_id": session_id,
        "reward": reward,
        "success": bool(success),
        "steps": steps_of(kit, observations, taken, session_id),
        "observations": observations,
    }


def steps_of(
    kit: Any, observations: list[str], actions: list[str], session_id: str
) -> list[dict[str, Any]]:
    """SFT steps of a played (or derived) episode: the grader's prompt before each action."""
    return [
        {
            "messages": grader_prompt(kit, session_id, observations[: i + 1], actions[:i]),
            "action": action,
        }
        for i, action in enumerate(actions)
    ]


Prompt = list[dict[str, str]] | str
"""Chat messages (through the chat template), or raw text to continue."""


def grader_prompt(kit: Any, session_id: str, observations: list[str], actions: list[str]) -> Prompt:
    """What the grader sends before the next action: the kit's ``grader_prompt`` where it has
    one, else ``build_messages`` with the grader's history window."""
    if hasattr(kit, "grader_prompt"):
        return kit.grader_prompt(session_id, list(observations), list(actions))
    return kit.build_messages(observations, actions, kit.HISTORY_WINDOW)


def grader_action(kit: Any, reply: str) -> str:
    """The action the grader would send for ``reply`` (its first line when none can be read)."""
    read = getattr(kit, "grader_action", kit.extract_action)
    return read(reply) or (reply.strip().splitlines() or [""])[0]


def reply_ids(tokenizer: Any, kit: Any, prompt: Prompt, action: str) -> list[int]:
    """The tokens a model should answer ``prompt`` with to take ``action``: the action and the
    end of turn after chat messages; after raw text, the kit's ``grader_reply(action)`` (the
    reply up to and with the newline the grader stops at)."""
    if isinstance(prompt, str):
        reply = getattr(kit, "grader_reply", None)
        text = reply(action) if reply is not None else f"{action}\n"
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    ids = tokenizer(action, add_special_tokens=False)["input_ids"]
    return [*ids, tokenizer.eos_token_id]


def newline_tokens(tokenizer: Any) -> frozenset[int]:
    """Token ids whose text holds a newline: a raw-text reply ends at the first of them, as
    the grader's generation stops at the first newline."""
    return frozenset(i for i in range(len(tokenizer)) if "\n" in tokenizer.decode([i]))


# rollouts --------------------------------------------------------------------------------------


@dataclass
class Episode:
    """One episode played by the policy: the prompt and sampled reply tokens of every turn."""

    session_id: str
    group: int
    env: Any
    observations: list[str]
    actions: list[str] = field(default_factory=list)
    turns: list[tuple[list[int], list[int]]] = field(default_factory=list)
    """(prompt token ids, reply token ids) per turn, as sampled."""
    kept: list[Sampled] = field(default_factory=list)
    """Per turn, the reply with its prompt's keys/values (:mod:`rollouts`), for the loss step."""
    reward: float = 0.0
    done: bool = False
    success: bool = False


def _prompt_ids(tokenizer: Any, prompt: Prompt) -> list[int]:
    """Token ids as the grader encodes them: raw text with the tokenizer's special tokens, chat
    messages through the chat template (which holds them)."""
    if isinstance(prompt, str):
        return list(tokenizer(prompt)["input_ids"])
    text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def play(
    model: Any,
    tokenizer: Any,
    kit: Any,
    session_ids: list[str],
    *,
    group_size: int,
    temperature: float,
    max_new_tokens: int,
    max_steps: int | None = None,
    engine: Any = None,
    seed: int = 0,
) -> list[Episode]:
    """Play ``group_size`` episodes of each session in lockstep: one batched sampling per turn
    over every live episode (:func:`rollouts.sample`: each distinct prompt prefilled once), at
    ``temperature`` (0: greedy). Each turn keeps its prompt's keys/values for the loss step.
    With ``engine`` (:class:`engine_rollouts.PolicyEngine`) each turn's batch is sampled by
    the engine instead (``seed`` + turn seeds its requests) and nothing is kept."""
    episodes: list[Episode] = []
    for group, session_id in enumerate(session_ids):
        for _ in range(group_size):
            env = kit.make_env(max_steps) if max_steps else kit.make_env()
            observation, _ = env.reset(session_id)
            episodes.append(Episode(session_id, group, env, [observation]))
    eos = tokenizer.eos_token_id
    model.eval()
    store = PrefixStore()
    stops: frozenset[int] | None = None
    turn_index = 0
    while live := [e for e in episodes if not e.done]:
        texts = [grader_prompt(kit, e.session_id, e.observations, e.actions) for e in live]
        raw = any(isinstance(text, str) for text in texts)
        if raw and stops is None:
            stops = newline_tokens(tokenizer)
        prompts = [_prompt_ids(tokenizer, text) for text in texts]
        if engine is not None:
            turns: list[Any] = [None] * len(prompts)
            replies = engine.sample(
                prompts,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                stop_tokens=stops if raw else (),
                seed=seed + 1000 * turn_index,
            )
        else:
            turns = sample(
                model,
                prompts,
                eos=eos,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                store=store,
                stop_tokens=stops if raw else frozenset(),
            )
            replies = [turn.reply for turn in turns]
        turn_index += 1
        for episode, prompt, turn, ids in zip(live, prompts, turns, replies, strict=True):
            reply = tokenizer.decode(ids, skip_special_tokens=True)
            if raw:
                reply = reply.split("\n", 1)[0]
            action = grader_action(kit, reply)
            observation, reward, done, info = episode.env.step(action)
            episode.turns.append((prompt, ids))
            if turn is not None:
                episode.kept.append(turn)
            episode.actions.append(action)
            episode.observations.append(observation)
            if done:
                episode.done, episode.reward = True, float(reward)
                episode.success = bool(info.get("success", reward >= 1.0))
    return episodes


def advantages(episodes: list[Episode]) -> list[float]:
    """:func:`recipe_common.group_advantages` of the episodes' rewards, grouped by session; a
    group whose episodes all scored the same carries no signal (advantage 0)."""
    return group_advantages([e.reward for e in episodes], [e.group for e in episodes])


def action_logprobs(
    model: Any, pairs: list[tuple[list[int], list[int]]], detach_prompt: bool = False
) -> Any:
    """Mean log-probability of each pair's action tokens given its prompt, as a tensor.

    Rows are left-padded so every action ends at the last position; the language-model head
    then runs only over the last ``max(action) + 1`` positions (``logits_to_keep``), not the
    whole prompt (a 49k-token vocabulary over ~300 prompt positions is wasted work).

    ``detach_prompt``: the prompt (all but its last token) runs first without gradient and
    only the last prompt token and the action run with it, attending to the prompt's cached
    keys and values. The values are the same; the gradient leaves out the path through the
    prompt's own activations. A WebShop turn is ~280 prompt tokens for ~10 action tokens, so
    the backward pass shrinks to a few dozen positions: a SmolLM2 step of 4 turns took 4.3 s
    instead of 10.1 s on two CPU cores (bench/action_sft_step.py).
    """
    import torch

    if detach_prompt:
        return _action_logprobs_detached(model, pairs)
    width = max(len(p) + len(a) for p, a in pairs)
    keep = max(len(a) for _, a in pairs) + 1
    ids = torch.zeros((len(pairs), width), dtype=torch.long)
    mask = torch.zeros((len(pairs), width), dtype=torch.long)
    target = torch.zeros((len(pairs), keep - 1), dtype=torch.float)
    for row, (prompt, action) in enumerate(pairs):
        tokens = prompt + action
        ids[row, width - len(tokens) :] = torch.tensor(tokens)
        mask[row, width - len(tokens) :] = 1
        target[row, keep - 1 - len(action) :] = 1.0
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    device = model.device
    logits = (
        model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
            logits_to_keep=keep,
        )
        .logits[:, :-1]
        .float()
    )
    labels = ids[:, width - keep + 1 :].to(device)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, labels[..., None]).squeeze(-1)
    target = target.to(device)
    return (logp * target).sum(-1) / target.sum(-1).clamp(min=1.0)


def _action_logprobs_detached(model: Any, pairs: list[tuple[list[int], list[int]]]) -> Any:
    """:func:`action_logprobs` with the prompt prefix under ``no_grad`` (see there).

    Without gradient: the prefix every prompt of the batch shares (the rules) runs once, then
    each prompt's rest (all but its last token), left-padded after the shared part. With
    gradient: the last prompt token and the action, right-padded. Rows look like
    ``[shared][padding][rest][last + action][padding]``; explicit positions skip the padding.
    """
    import torch

    device = model.device
    heads = [p[:-1] for p, _ in pairs]
    shared = _shared_prefix(heads)
    rests = [h[shared:] for h in heads]
    tails = [[p[-1], *a] for p, a in pairs]
    size, width = len(pairs), max(len(r) for r in rests)
    rest_ids = torch.zeros((size, width), dtype=torch.long)
    rest_mask = torch.zeros((size, width), dtype=torch.long)
    for row, rest in enumerate(rests):
        if rest:
            rest_ids[row, width - len(rest) :] = torch.tensor(rest)
            rest_mask[row, width - len(rest) :] = 1
    shared_mask = torch.ones((size, shared), dtype=torch.long)
    cache = None
    with torch.no_grad():
        if shared:
            cache = model(
                input_ids=torch.tensor([heads[0][:shared]], device=device),
                use_cache=True,
                logits_to_keep=1,
            )
            cache = cache_of(cache)
            cache.batch_repeat_interleave(size)
        if width:
            cache = model(
                input_ids=rest_ids.to(device),
                attention_mask=torch.cat([shared_mask, rest_mask], dim=-1).to(device),
                position_ids=(shared + rest_mask.cumsum(-1) - 1).clamp(min=0).to(device),
                **cache_arg(model, cache),
                use_cache=True,
                logits_to_keep=1,
            )
            cache = cache_of(cache)
    prefix_mask = torch.cat([shared_mask, rest_mask], dim=-1)
    return tail_logprobs(model, cache, prefix_mask, shared + rest_mask.sum(-1), tails)


def _shared_prefix(rows: list[list[int]], minimum: int = 16) -> int:
    """Tokens every row starts with (0 when fewer than ``minimum``: not worth a call)."""
    n = min(len(r) for r in rows)
    for i in range(n):
        token = rows[0][i]
        if any(r[i] != token for r in rows):
            n = i
            break
    return n if n >= minimum else 0


def weighted_step(
    model: Any,
    optimizer: Any,
    samples: list[tuple[list[int], list[int], float]],
    micro_batch: int = 8,
    detach_prompt: bool = True,
) -> float:
    """One optimiser step on ``-sum(weight * mean action log-prob) / n`` over ``samples``
    (prompt ids, action ids, weight), in micro-batches (see :func:`action_logprobs` for
    ``detach_prompt``). Returns the loss (for the log)."""
    import torch

    model.train()
    optimizer.zero_grad()
    total = 0.0
    for start in range(0, len(samples), micro_batch):
        chunk = samples[start : start + micro_batch]
        per_sample = action_logprobs(model, [(p, a) for p, a, _ in chunk], detach_prompt)
        weights = torch.tensor([w for _, _, w in chunk], device=model.device)
        loss = -(weights * per_sample).sum() / len(samples)
        loss.backward()
        total += loss.item()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
    optimizer.step()
    return total


def policy_loss_step(
    model: Any,
    optimizer: Any,
    episodes: list[Episode],
    advs: list[float],
    micro_batch: int = 8,
    iterations: int = 1,
    clip: float = 0.2,
) -> int:
    """GRPO's update on a batch of fresh rollouts: ``iterations`` optimiser steps on the
    clipped objective ``-min(r A, clip(r, 1 - clip, 1 + clip) A)`` of every turn of every
    episode with a non-zero advantage, ``r`` the ratio of the turn's mean action
    log-probability to the one before the first step (which is therefore plain REINFORCE with
    group baselines; later iterations are held near the sampling policy by the clip). Turns
    sampled by :func:`play` are scored over their kept prompt keys/values
    (:func:`rollouts.cached_logprobs`), others through :func:`action_logprobs`. Returns the
    number of turns trained on."""
    import torch

    samples = [
        (prompt, reply, kept, adv)
        for episode, adv in zip(episodes, advs, strict=True)
        if adv != 0.0
        for (prompt, reply), kept in zip(
            episode.turns, episode.kept or [None] * len(episode.turns), strict=True
        )
        if reply
    ]
    if not samples:
        return 0
    old: list[Any] = []
    for iteration in range(max(1, iterations)):
        model.train()
        optimizer.zero_grad()
        for index, start in enumerate(range(0, len(samples), micro_batch)):
            chunk = samples[start : start + micro_batch]
            if all(kept is not None for _, _, kept, _ in chunk):
                logp = cached_logprobs(model, [kept for _, _, kept, _ in chunk])
            else:
                logp = action_logprobs(model, [(p, r) for p, r, _, _ in chunk], True)
            if iteration == 0:
                old.append(logp.detach())
            ratio = torch.exp(logp - old[index])
            adv = torch.tensor([a for *_, a in chunk], device=logp.device)
            objective = torch.minimum(ratio * adv, ratio.clamp(1.0 - clip, 1.0 + clip) * adv)
            (-objective.sum() / len(samples)).backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step()
    return len(samples)


def tokenize_rows(
    tokenizer: Any, rows: list[dict[str, Any]], max_length: int | None = None, kit: Any = None
) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, reply ids) per SFT row, as the grader encodes them (:func:`_prompt_ids`,
    :func:`reply_ids`); with ``max_length``, the prompt loses its oldest tokens so the pair
    fits (the action never)."""
    pairs = []
    for row in rows:
        action = reply_ids(tokenizer, kit, row["prompt"], row["completion"][0]["content"])
        prompt = _prompt_ids(tokenizer, row["prompt"])
        if max_length:
            prompt = prompt[max(0, len(prompt) - max(1, max_length - len(action))) :]
        pairs.append((prompt, action))
    return pairs


def with_adapter(model: Any, args: argparse.Namespace) -> Any:
    """The model with fresh LoRA adapters (``--mode lora``), or itself (``--mode full``)."""
    if args.mode != "lora":
        return model
    from peft import get_peft_model

    return get_peft_model(model, lora_config(args.lora_r))


def length_batches(
    pairs: list[tuple[list[int], list[int]]], size: int, seed: int, window: int = 16
) -> list[list[int]]:
    """Indices of ``pairs`` in batches of ``size``: shuffled, then sorted by prompt length
    within windows of ``window`` batches, so a batch pads little; batch order shuffled."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    for start in range(0, len(order), size * window):
        chunk = sorted(order[start : start + size * window], key=lambda i: len(pairs[i][0]))
        batches += [chunk[i : i + size] for i in range(0, len(chunk) - size + 1, size)]
    rng.shuffle(batches)
    return batches


def run_action_sft(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    *,
    args: argparse.Namespace,
    seconds: float,
    kit: Any = None,
) -> tuple[Any, int]:
    """SFT on the action tokens until ``seconds`` pass or ``--sft-epochs`` end; (merged model,
    steps). ``kit`` says how a raw-text prompt's reply looks (:func:`reply_ids`).

    Written here rather than with TRL's ``SFTTrainer``, which runs the whole prompt with
    gradient and the full-vocabulary head over every prompt token: on two CPU cores a SmolLM2
    step of 8 WebShop turns measured ~160 s through the trainer. Here the prompt runs without
    gradient (:func:`action_logprobs`, ``detach_prompt``) in length-sorted batches:
    bench/action_sft_step.py measures the step against full backpropagation.
    """
    import torch

    model = with_adapter(model, args)
    lr = args.sft_lr or (1e-3 if args.mode == "lora" else 5e-5)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    pairs = tokenize_rows(tokenizer, rows, args.max_length, kit)
    if not pairs:
        log("  sft: no demonstration rows (no demonstration succeeded): nothing to train on")
        return merged(model), 0
    started = time.monotonic()
    deadline = started + seconds
    size = min(args.sft_batch_size, len(pairs))
    epochs = max(1, args.sft_epochs)
    total = epochs * (len(pairs) // size)
    steps, step_s = 0, 0.0
    for epoch in range(epochs):
        for batch in length_batches(pairs, size, args.seed + epoch):
            if steps and time.monotonic() + step_s > deadline:
                return merged(model), steps
            began = time.monotonic()
            scale = decay_factor(began - started, seconds, steps, total)
            for group in optimizer.param_groups:
                group["lr"] = lr * scale
            samples = [(*pairs[i], 1.0) for i in batch]
            loss = weighted_step(model, optimizer, samples, micro_batch=size)
            steps += 1
            step_s = time.monotonic() - began
            log(
                f"  sft step {steps} (epoch {epoch + 1}): loss {loss:.3f}, "
                f"lr {lr * scale:.1e}, {step_s:.1f}s"
            )
    return merged(model), steps


def decay_factor(elapsed: float, seconds: float, steps: int, total: int) -> float:
    """The learning rate's share at this step: linear from 1 to 0 over the phase, by time or
    by steps, whichever is further along.

    The phase ends at an unknown step (its deadline), so a constant rate leaves the model
    wherever the last few batches pushed it: measured on the WebShop default at 1e-3, one
    batch with a ``click[next >]`` demonstration among the last ten moved P(next) on product
    pages from 0.00 to 0.58 and the run scored 0 %. A rate that is near 0 at the deadline ends
    on the average of what the phase learnt."""
    done = max(elapsed / seconds if seconds > 0 else 1.0, steps / total if total > 0 else 1.0)
    return max(0.0, 1.0 - done)


def run_online_grpo(
    model: Any,
    tokenizer: Any,
    kit: Any,
    session_ids: list[str],
    *,
    args: argparse.Namespace,
    seconds: float,
    step_times: StepTimes,
    grader_busy: Callable[[], bool] = lambda: False,
    engine: Any = None,
) -> tuple[Any, int]:
    """GRPO steps on fresh rollouts until ``seconds`` pass; returns (merged model, steps).
    ``grader_busy()``: whether a submission is being evaluated now (a step then trains on one
    core fewer: :func:`recipe_common.share_cores`). ``engine``
    (:func:`start_rollout_engine`): the rollouts run on it, handed each step's adapter."""
    import torch

    cores = torch.get_num_threads()
    model = with_adapter(model, args)
    lr = args.grpo_lr or (1e-4 if args.mode == "lora" else 1e-5)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    deadline = time.monotonic() + seconds
    rng = random.Random(args.seed + 17)
    steps = 0
    update_s: float | None = None
    while steps < args.grpo_steps:
        step_s = step_times.seconds.get("online-grpo")
        if step_s and time.monotonic() + 1.25 * step_s > deadline:
            log(
                f"  grpo: a step takes ~{step_s:.0f}s; stopping with "
                f"{deadline - time.monotonic():.0f}s left"
            )
            break
        started = time.monotonic()
        threads = share_cores(grader_busy(), cores)
        synced = engine.use(model) if engine is not None else 0.0
        episodes, batch_s = signal_groups(
            model, tokenizer, kit, session_ids, rng, args, deadline, update_s, engine
        )
        advs = advantages(episodes)
        played = time.monotonic() - started
        updating = time.monotonic()
        trained = policy_loss_step(
            model,
            optimizer,
            episodes,
            advs,
            iterations=args.grpo_iterations,
            clip=args.grpo_clip,
        )
        steps += 1
        elapsed = time.monotonic() - started
        update_s = max(update_s or 0.0, time.monotonic() - updating)
        # the next step needs one batch and an update, each as slow as the slowest so far:
        # episodes' lengths vary (a batch measured 9 s and then 63 s), a step that overruns
        # the budget loses the phase's checkpoint, and batches dropped for want of a signal
        # are not part of every step
        step_times.seconds["online-grpo"] = max(
            batch_s + update_s, step_times.seconds.get("online-grpo", 0)
        )
        mean = sum(e.reward for e in episodes) / len(episodes)
        wins = sum(e.success for e in episodes)
        log(
            f"  grpo step {steps}: {len(episodes)} episodes, mean reward {mean:.2f}, "
            f"{wins} successes, {trained} turns trained; rollouts {played:.0f}s"
            + (f" on vLLM (adapter synced in {synced:.1f}s)" if engine is not None else "")
            + f", step {elapsed:.0f}s on {threads} thread(s)"
        )
        del episodes, advs  # a batch's kept keys/values are gigabytes: not alive beside the next
        if time.monotonic() >= deadline:
            break
    return merged(model), steps


def start_rollout_engine(
    model: Any, tokenizer: Any, args: argparse.Namespace, scratch: Path, seconds: float
) -> Any:
    """``--rollout-engine vllm``: a vLLM server over the GRPO phase's starting weights (saved
    in ``scratch``), serving each step's LoRA adapter (:mod:`engine_rollouts`); None, said
    why, when it cannot be had (the phase then rolls out here)."""
    from engine_rollouts import start_for

    if args.mode != "lora":
        log("  grpo: --rollout-engine vllm serves LoRA adapters; --mode full rolls out here")
        return None
    try:
        engine = start_for(model, tokenizer, scratch=scratch, lora_rank=args.lora_r, seed=args.seed)
    except (OSError, RuntimeError) as exc:  # the phase goes on without it
        log(f"  grpo: vLLM did not start ({exc}); rolling out here")
        return None
    if engine is not None:
        log(f"  grpo: vLLM started in {engine.startup_s:.0f}s of the phase's {seconds:.0f}s")
    return engine


def signal_groups(
    model: Any,
    tokenizer: Any,
    kit: Any,
    session_ids: list[str],
    rng: random.Random,
    args: argparse.Namespace,
    deadline: float,
    update_s: float | None,
    engine: Any = None,
) -> tuple[list[Episode], float]:
    """Rollouts for one GRPO step, sampled again while no group carries a signal (DAPO's
    dynamic sampling); returns the batch and the slowest batch's seconds.

    A group whose episodes all scored the same has advantage 0 and trains nothing, which after
    SFT is most groups (four identical successes, or four failures). A batch without a signal
    is dropped and another ``--grpo-sessions`` sessions are played, while 1.25x the slowest
    batch plus the update (``update_s``, the slowest so far; unknown: one more batch's time)
    still fits before ``deadline``. Only the last batch is returned: groups are numbered
    within a batch, and the dropped ones had nothing to train."""
    unused = list(session_ids)
    slowest = 0.0
    while True:
        started = time.monotonic()
        chosen = rng.sample(unused, min(args.grpo_sessions, len(unused)))
        unused = [s for s in unused if s not in chosen]
        episodes = play(
            model,
            tokenizer,
            kit,
            chosen,
            group_size=args.grpo_group,
            temperature=args.grpo_temperature,
            max_new_tokens=args.max_new_tokens,
            engine=engine,
            seed=rng.randrange(2**31),
        )
        slowest = max(slowest, time.monotonic() - started)
        update = 1.25 * update_s if update_s is not None else slowest
        if any(advantages(episodes)) or not unused:
            return episodes, slowest
        if time.monotonic() + 1.25 * slowest + update > deadline:
            return episodes, slowest
        del episodes  # freed before the next batch is played, not after
        log("  grpo: every group scored alike (no signal); playing another session")


# the plan --------------------------------------------------------------------------------------


def sft_first_share(run: Run, phase: str) -> float:
    """``--sft-share`` of the time left (after two saves' reserve) for the SFT warm-up when
    GRPO follows; otherwise an even share."""
    if phase == "sft" and len(run.phases) > 1:
        return max(0.0, run.clock.left() - 2 * run.save_reserve) * run.args.sft_share
    return even_share(run, phase)


def main(
    kit: Any,
    args: argparse.Namespace,
    demonstration: Callable[[str], dict[str, Any]] | None = None,
) -> int:
    """The whole plan; ``demonstration`` (session id -> episode) replaces the kit's expert as
    the SFT data when a task's recipe has a better one for a small model."""
    session_ids = list(kit.train_ids())
    random.Random(args.seed).shuffle(session_ids)
    sft_ids = session_ids[: args.sft_episodes] if args.sft_episodes else session_ids
    rows, n_expert = expert_rows(kit, sft_ids, demonstration)
    random.Random(args.seed + 1).shuffle(rows)
    log(f"{len(session_ids)} train sessions; {len(rows)} SFT turns from {n_expert} expert episodes")

    def sft(run: Run, seconds: float) -> tuple[Any, int]:
        return run_action_sft(run.model, run.tokenizer, rows, args=args, seconds=seconds, kit=kit)

    def grpo(run: Run, seconds: float) -> tuple[Any, int]:
        started, engine = time.monotonic(), None
        if args.rollout_engine == "vllm":  # its start counts in the phase's time
            engine = start_rollout_engine(run.model, run.tokenizer, args, run.scratch, seconds)
        with engine or contextlib.nullcontext():
            return run_online_grpo(
                run.model,
                run.tokenizer,
                kit,
                session_ids,
                args=args,
                seconds=seconds - (time.monotonic() - started),
                step_times=run.step_times,
                grader_busy=lambda: bool(run.subs.poll() or run.subs.pending()),
                engine=engine,
            )

    return run_rounds(
        args,
        ["sft"] if args.no_grpo else ["sft", "grpo"],
        {"sft": sft, "grpo": grpo},
        share=sft_first_share,
        min_seconds=5.0,
        checkpoint="v{version}-{phase}",
    )
