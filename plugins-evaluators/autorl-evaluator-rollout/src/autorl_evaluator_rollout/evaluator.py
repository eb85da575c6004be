"""The ``rollout`` evaluator: a checkpoint plays every eval session of an interactive task.

The task's ``interactive`` contract (:mod:`autorl_evaluator_rollout.protocol`) comes in
``EvalRequest.contract``, loaded by the engine from the installed task package, never from the
agent's workspace. Episodes run in lockstep
(:mod:`autorl_evaluator_rollout.lockstep`): one batched generation per turn over every live
episode, with transformers on a CPU and vLLM on a GPU (``autorl_hf.generation.Generator``).
Score = percent of sessions that end with ``info["success"]``.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.types import EvalRequest, EvalResult
from autorl_evaluator_rollout.lockstep import Episode, Lockstep, Prompt, Reply
from autorl_evaluator_rollout.options import Options, Settings, env_config, parse_settings
from autorl_evaluator_rollout.prefix_decoding import PrefixCachedDecoder, supports_prefix_cache
from autorl_evaluator_rollout.protocol import Protocol, from_contract

TRAJECTORIES = "trajectories.jsonl"


@dataclass
class GeneratorPolicy:
    """Batched generation as a lockstep policy (greedy unless ``temperature`` > 0).

    When sampling, turn ``t`` is seeded with ``seed + t``: a rerun reproduces the episodes, and
    successive turns do not repeat the same random stream.
    """

    generator: Any
    max_new_tokens: int
    batch_size: int
    temperature: float = 0.0
    seed: int = 0
    stop: Sequence[str] = ()
    turn: int = 0

    decoder: Any = None
    """A :class:`PrefixCachedDecoder` over the same model (CPU path), or None."""

    def __call__(self, prompts: list[Prompt]) -> list[Reply]:
        engine = self.decoder if self.decoder is not None else self.generator
        completions = engine.completions(
            prompts,
            max_new_tokens=self.max_new_tokens,
            batch_size=self.batch_size,
            temperature=self.temperature,
            stop=tuple(self.stop),
            seed=self.seed + self.turn,
        )
        self.turn += 1
        return [Reply(text=c.text, tokens=c.tokens) for c in completions]


def prefix_decoder(generator: Any, enabled: bool) -> PrefixCachedDecoder | None:
    """The prefix-cached CPU decoder when it applies (transformers backend, full attention)."""
    if not enabled or getattr(generator, "backend", None) != "transformers":
        return None
    if not supports_prefix_cache(generator.model):
        return None
    return PrefixCachedDecoder(generator.model, generator.tokenizer)


def load_generator(model_dir: Path, device: str, base_dir: Path | None = None) -> Any:
    """The model behind the policy; a directory that does not load is a ConfigError."""
    from autorl_hf.engine.env import EngineUnavailable
    from autorl_hf.generation import Generator

    try:
        return Generator(model_dir, device=device, base_dir=base_dir)
    except EngineUnavailable:
        raise  # the engine asked for is missing or cannot run it: its own message says how
    except Exception as exc:  # any load failure becomes one clear message
        raise ConfigError(
            f"evaluator 'rollout': cannot load the model in {model_dir} "
            f"({type(exc).__name__}: {exc})",
            hint="pass a directory written by model.save_pretrained(...) and "
            "tokenizer.save_pretrained(...) (config.json, weights, tokenizer files)",
        ) from None


def read_sessions(protocol: Protocol, eval_path: Path, limit: int | None) -> list[str]:
    """The eval session ids (the first ``limit``); none at all is an error, not a 0 % score."""
    try:
        sessions = list(protocol.load_sessions(eval_path))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"evaluator 'rollout': {protocol.name}.load_sessions cannot read {eval_path} ({exc})",
            hint="check the task's eval split (autorl prepare rebuilds it)",
        ) from None
    bad = [s for s in sessions if not isinstance(s, str)]
    if bad:
        raise ConfigError(
            f"evaluator 'rollout': {protocol.name}.load_sessions must return session ids "
            f"(str), got {type(bad[0]).__name__}: {bad[0]!r:.80}",
            hint="return [goal.session_id for goal in goals]",
        )
    if limit is not None:
        sessions = sessions[:limit]
    if not sessions:
        raise ConfigError(
            f"evaluator 'rollout': {eval_path} holds no eval session",
            hint="the task's eval split is empty: check its eval_size option",
        )
    return sessions


def binomial_se(successes: int, n: int) -> float:
    """Standard error of a success rate over ``n`` independent sessions, sqrt(p(1-p)/n): the
    noise from which sessions happen to be in the eval split (a greedy policy replays the same
    episodes, so reruns alone do not show it)."""
    if n <= 0:
        return 0.0
    p = successes / n
    return (p * (1 - p) / n) ** 0.5


def _rate(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


def summarize(episodes: list[Episode], seconds: float) -> dict[str, Any]:
    """Aggregate metrics; per-episode extras from ``episode_metrics`` are averaged as
    ``mean_<name>``."""
    n = len(episodes)
    steps = sum(e.steps for e in episodes)
    wins = sum(e.success for e in episodes)
    se = binomial_se(wins, n)
    metrics: dict[str, Any] = {
        "success_rate": round(wins / n, 4),
        "success_rate_se": round(se, 4),
        "score_se": round(100 * se, 2),
        "mean_reward": round(sum(e.reward for e in episodes) / n, 4),
        "mean_steps": round(steps / n, 2),
        "invalid_action_rate": _rate(sum(not v for e in episodes for v in e.valid), steps),
        "unparsed_action_rate": _rate(sum(not p for e in episodes for p in e.parsed), steps),
        "n_episodes": n,
        "generated_tokens": sum(e.tokens for e in episodes),
        "seconds": round(seconds, 2),
        "episodes_per_second": round(n / seconds, 3) if seconds > 0 else None,
    }
    names = sorted({k for e in episodes for k in e.metrics})
    for name in names:
        values = [e.metrics[name] for e in episodes if name in e.metrics]
        metrics[f"mean_{name}"] = round(sum(values) / len(values), 4)
    return metrics


def write_trajectories(path: Path, episodes: list[Episode]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for episode in episodes:
            fh.write(json.dumps(episode.record(), ensure_ascii=False, default=str) + "\n")


class RolloutEvaluator:
    """Success rate (percent) of the model playing every eval session of an interactive task."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "rollout"

    def check_config(self, config: Any, contract: Any = None) -> None:
        """Refuse bad options before any work: the evaluator's own keys, and with the
        contract, the keys forwarded to ``make_env`` (the engine and TaskConformance call it)."""
        parse_settings(config)
        if contract is not None:
            name = getattr(contract, "__name__", type(contract).__name__)
            env_config(config, from_contract(contract, name).env_options, name)

    def evaluate(self, request: EvalRequest) -> EvalResult:
        settings: Settings = parse_settings(request.config)
        contract = request.contract
        name = getattr(contract, "__name__", type(contract).__name__)
        protocol = from_contract(contract, name)
        task_config = env_config(request.config, protocol.env_options, protocol.name)
        eval_path = Path(request.eval_path)
        sessions = read_sessions(protocol, eval_path, settings.limit)
        position = {session: i for i, session in enumerate(sessions)}
        if settings.order_seed is not None:
            random.Random(settings.order_seed).shuffle(sessions)

        started = time.monotonic()
        generator = load_generator(Path(request.model_dir), settings.device, request.base_model_dir)
        loaded = time.monotonic()
        policy = GeneratorPolicy(
            generator,
            max_new_tokens=settings.max_new_tokens,
            batch_size=settings.batch_size,
            temperature=settings.temperature,
            seed=request.seed,
            stop=protocol.stop,
            decoder=prefix_decoder(generator, settings.prefix_cache),
        )
        lockstep = Lockstep(
            make_env=lambda: protocol.make_env(task_config, eval_path),
            policy=policy,
            build_messages=protocol.build_messages,
            extract_action=protocol.extract_action,
            batch_size=settings.batch_size,
            history_window=settings.history_window,
            episode_metrics=protocol.episode_metrics,
            progress=request.progress,
            prompt_info=protocol.messages_take_info,
        )
        episodes = sorted(lockstep.run(sessions), key=lambda e: position[e.session_id])
        seconds = time.monotonic() - loaded
        engine = getattr(generator, "engine", None)  # name, version, precision
        if hasattr(generator, "close"):
            generator.close()  # the engine is handed back, idle for the same weights (engine.pool)

        work_dir = Path(request.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        details_path = work_dir / TRAJECTORIES
        write_trajectories(details_path, episodes)
        metrics = summarize(episodes, seconds)
        metrics.update(
            backend=getattr(generator, "backend", "unknown"),
            engine=engine,
            prefix_cache=policy.decoder is not None,
            turns=lockstep.turns,
            load_seconds=round(loaded - started, 2),
        )
        if policy.decoder is not None:  # what the model computed (bench/rollout_throughput.py)
            decoder = policy.decoder
            metrics.update(
                prompt_tokens_computed=decoder.prompt_tokens_computed,
                prompt_tokens_reused=decoder.prompt_tokens_reused,
                positions_run=decoder.positions_run,
                head_positions=decoder.head_positions,
            )
        return EvalResult(
            score=100.0 * sum(e.success for e in episodes) / len(episodes),
            n=len(episodes),
            metrics=metrics,
            details_path=details_path,
        )
