"""GRPO rollouts on the vLLM engine (``--rollout-engine vllm``): the recipe's own server over
the phase's weights, each step's LoRA adapter handed to it, plays the same episodes as the
in-process lockstep sampler and trains on them.

Needs the engine environment (``autorl engine prepare``; ``make test`` builds it and sets
``AUTORL_REQUIRE_ENGINE=1``, which turns a missing engine into a failure). SmolLM2, not the
tiny model: vLLM CPU's attention takes none of the tiny model's head sizes.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pytest
from autorl_hf.engine.env import find_engine
from autorl_testing.engine import needs_engine

pytestmark = [
    pytest.mark.slow,
    needs_engine,
]


def test_engine_rollouts_equal_lockstep_with_the_steps_adapter_and_train(
    smollm2_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import autorl_kit as kit
    import engine_rollouts
    import interactive
    import torch
    from recipe_common import load_base

    engine_env = find_engine()
    assert engine_env is not None
    monkeypatch.setenv(engine_rollouts.ENGINE_ENV, str(engine_env.python))
    model, tokenizer = load_base(smollm2_workspace / "models" / "base")
    args = argparse.Namespace(mode="lora", lora_r=8)
    scratch = smollm2_workspace / "scratch"
    engine = engine_rollouts.start_for(model, tokenizer, scratch=scratch, lora_rank=8, seed=0)
    assert engine is not None
    try:
        policy = interactive.with_adapter(model, args)
        torch.manual_seed(0)
        with torch.no_grad():  # an adapter that changes the policy (PEFT starts B at zero)
            for name, weight in policy.named_parameters():
                if "lora_B" in name:
                    weight.normal_(0.0, 0.02)
        assert engine.use(policy) < 30.0 and engine.model == "policy-1"
        ids = kit.train_ids()[:3]
        play = {"group_size": 1, "temperature": 0.0, "max_new_tokens": 16, "max_steps": 3}
        served = interactive.play(policy, tokenizer, kit, ids, engine=engine, **play)
        local = interactive.play(policy, tokenizer, kit, ids, **play)
        # greedy in fp32: the engine with the adapter samples what PEFT's model samples
        assert [e.turns for e in served] == [e.turns for e in local]
        assert [e.actions for e in served] == [e.actions for e in local]
        assert all(not e.kept for e in served) and all(e.kept for e in local)
        engine.model = engine_rollouts.SERVED  # the phase's weights without the adapter
        base = interactive.play(policy, tokenizer, kit, ids, engine=engine, **play)
        assert [e.turns for e in base] != [e.turns for e in served]
        # a second adapter replaces the first; the loss step trains on the engine's tokens
        engine.use(policy)
        assert engine.model == "policy-2"
        optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad])
        trained = interactive.policy_loss_step(
            policy, optimizer, served, [1.0, -1.0, 0.0][: len(served)]
        )
        assert trained == sum(len(e.turns) for e in served[:2])
    finally:
        engine.close()
    assert engine.process.poll() is not None
    deadline = time.monotonic() + 10
    while _group_alive(engine.process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)  # killed workers are reaped by init
    assert not _group_alive(engine.process.pid), "a worker of the engine outlived it"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
