"""The rollout evaluator on the real tiny model: the counter env, and the real WebShop env."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import counter_protocol as counter
import pytest
from autorl_evaluator_rollout.contract import INTERACTIVE
from autorl_evaluator_rollout.evaluator import RolloutEvaluator
from autorl_testing import conformance

from autorl.contracts import load_contract
from autorl.errors import ConfigError
from autorl.types import EvalRequest

METRICS = {
    "success_rate",
    "mean_reward",
    "mean_steps",
    "invalid_action_rate",
    "n_episodes",
    "generated_tokens",
    "seconds",
    "episodes_per_second",
}


def counter_request(model: Path, tmp_path: Path, targets=(0, 1, 2, 0, 1), progress=None, **config):
    eval_path = counter.write_sessions(tmp_path / "sessions.jsonl", list(targets))
    return EvalRequest(
        model_dir=model,
        eval_path=eval_path,
        contract=load_contract(INTERACTIVE, "counter_protocol"),
        config={
            "max_new_tokens": 8,
            "batch_size": 4,
            "max_steps": 3,
            **config,
        },
        work_dir=tmp_path / "work",
        progress=progress,
    )


def webshop_request(model: Path, work: Path, batch_size: int, sessions: int = 6) -> EvalRequest:
    from autorl_task_webshop.task import DATA_DIR

    return EvalRequest(
        model_dir=model,
        eval_path=DATA_DIR / "goals_eval.json",
        contract=load_contract(INTERACTIVE, "autorl_task_webshop.protocol"),
        config={
            "max_new_tokens": 24,
            "batch_size": batch_size,
            "history_window": 2,
            "max_steps": 4,
            "limit": sessions,
        },
        work_dir=work,
    )


def read_trajectories(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class TestRolloutConformance(conformance.EvaluatorConformance):
    plugin_module = "autorl_evaluator_rollout.plugin"

    def eval_request(self, tmp_path: Path) -> EvalRequest:
        import autorl_model_tiny.model as tiny

        model = tiny.TinyModel().materialize(tmp_path / "models").path
        return counter_request(model, tmp_path)


def test_trajectories_metrics_and_progress(tiny_model_dir: Path, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    counter.MADE.clear()
    result = RolloutEvaluator().evaluate(
        counter_request(
            tiny_model_dir, tmp_path, progress=lambda d, t: calls.append((d, t)), tag="forwarded"
        )
    )
    assert result.n == 5 and calls[0] == (0, 5) and calls[-1] == (5, 5)
    assert result.details_path == tmp_path / "work" / "trajectories.jsonl"
    episodes = read_trajectories(result.details_path)
    assert [e["session_id"] for e in episodes] == [f"c{i}" for i in range(5)]
    for episode in episodes:
        assert episode["done"] and 1 <= episode["steps"] <= 3
        assert len(episode["observations"]) == episode["steps"] + 1
        assert len(episode["replies"]) == len(episode["actions"]) == len(episode["rewards"])
        assert episode["generated_tokens"] > 0
    assert set(result.metrics) >= METRICS
    metrics = result.metrics
    assert metrics["n_episodes"] == 5
    assert metrics["generated_tokens"] == sum(e["generated_tokens"] for e in episodes)
    assert metrics["mean_steps"] == pytest.approx(sum(e["steps"] for e in episodes) / 5)
    assert result.score == pytest.approx(100 * sum(e["success"] for e in episodes) / 5)
    assert metrics["success_rate"] == pytest.approx(result.score / 100, abs=1e-4)
    invalid = sum(not v for e in episodes for v in e["valid"])
    assert metrics["invalid_action_rate"] == pytest.approx(
        invalid / (5 * metrics["mean_steps"]), abs=1e-3
    )
    assert "mean_final_count" in metrics
    # the task's own keys reach make_env, the evaluator's do not; one env per slot
    assert counter.MADE == [{"max_steps": 3, "tag": "forwarded"}] * 4


@pytest.mark.e2e  # many WebShop episodes on the model, twice
def test_lockstep_equals_one_at_a_time_on_webshop(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Greedy decoding, the real WebShop env: batch 6 plays exactly what batch 1 plays."""
    batched = RolloutEvaluator().evaluate(webshop_request(tiny_model_dir, tmp_path / "b", 6))
    single = RolloutEvaluator().evaluate(webshop_request(tiny_model_dir, tmp_path / "s", 1))
    lock, alone = (read_trajectories(r.details_path) for r in (batched, single))
    assert [e["session_id"] for e in lock] == [f"eval-{i:04d}" for i in range(6)]
    assert [e["actions"] for e in lock] == [e["actions"] for e in alone]
    assert [e["replies"] for e in lock] == [e["replies"] for e in alone]
    assert batched.score == single.score
    assert batched.metrics["turns"] < single.metrics["turns"]
    for episode in lock:
        assert episode["observations"][0].startswith("WebShop\nInstruction:")
        assert episode["done"] and episode["steps"] <= 4
        assert isinstance(episode["success"], bool)


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_sampling_is_reproducible_with_the_seed(tiny_model_dir: Path, tmp_path: Path) -> None:
    def sampled(work: str, seed: int) -> list:
        request = counter_request(tiny_model_dir, tmp_path / work, temperature=1.0)
        request = dataclasses.replace(request, seed=seed)
        return [
            e["replies"]
            for e in read_trajectories(RolloutEvaluator().evaluate(request).details_path)
        ]

    assert sampled("a", 3) == sampled("b", 3)
    assert sampled("a", 3) != sampled("c", 4)


def test_another_session_order_plays_the_same_episodes(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """``order_seed`` (the noise measurement): other lockstep batches, the same greedy
    episodes, trajectories still in file order; the binomial SE is reported."""
    targets = (0, 1, 2, 0, 1, 2, 1)
    plain = RolloutEvaluator().evaluate(counter_request(tiny_model_dir, tmp_path / "a", targets))
    shuffled = RolloutEvaluator().evaluate(
        counter_request(tiny_model_dir, tmp_path / "b", targets, order_seed=3)
    )
    first, second = (read_trajectories(r.details_path) for r in (plain, shuffled))
    assert [e["session_id"] for e in second] == [f"c{i}" for i in range(len(targets))]
    assert [e["actions"] for e in first] == [e["actions"] for e in second]
    assert shuffled.score == plain.score
    p = plain.metrics["success_rate"]
    expected = (p * (1 - p) / len(targets)) ** 0.5
    assert plain.metrics["success_rate_se"] == pytest.approx(expected, abs=1e-4)


def test_limit_plays_the_first_sessions(tiny_model_dir: Path, tmp_path: Path) -> None:
    result = RolloutEvaluator().evaluate(counter_request(tiny_model_dir, tmp_path, limit=2))
    assert result.n == 2
    assert [e["session_id"] for e in read_trajectories(result.details_path)] == ["c0", "c1"]


def test_no_session_is_a_config_error(tiny_model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="holds no eval session"):
        RolloutEvaluator().evaluate(counter_request(tiny_model_dir, tmp_path, targets=()))


def test_a_model_that_does_not_load_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot load the model") as info:
        RolloutEvaluator().evaluate(counter_request(tmp_path / "model", tmp_path))
    assert "save_pretrained" in str(info.value)


def test_raw_text_prompts_end_to_end(tiny_model_dir: Path, tmp_path: Path) -> None:
    """A contract whose ``build_messages`` returns a ``str`` (and takes the reset info): the
    tiny model continues the text as it is, no chat template, with the prefix-cached CPU
    decoder and with plain batched generation alike."""
    import counter_text_protocol as text
    from autorl_hf.generation import Generator

    def run(work: str, prefix_cache: bool) -> tuple[list[dict], list[str]]:
        text.BUILT.clear()
        request = dataclasses.replace(
            counter_request(tiny_model_dir, tmp_path / work, targets=(0, 1, 2)),
            contract=load_contract(INTERACTIVE, "counter_text_protocol"),
        )
        request = dataclasses.replace(
            request, config={**request.config, "prefix_cache": prefix_cache}
        )
        result = RolloutEvaluator().evaluate(request)
        assert result.n == 3 and result.metrics["prefix_cache"] is prefix_cache
        return read_trajectories(result.details_path), list(text.BUILT)

    cached, prompts = run("cached", True)
    plain, _ = run("plain", False)
    assert [e["replies"] for e in cached] == [e["replies"] for e in plain]
    assert prompts and all(isinstance(p, str) for p in prompts)
    assert prompts[0] == "Count to 0, then stop.\ncount=0 target=0\n>"
    first = Generator(tiny_model_dir, device="cpu").completions(
        [prompts[0]], max_new_tokens=8, stop=("\n",)
    )[0]
    assert cached[0]["replies"][0] == first.text and "\n" not in first.text
