"""Episodes in lockstep: a pool of live episodes, one batched policy call per turn.

Each turn every live episode needs exactly one action, so the prompts of all of them go to the
policy together (one batched generation instead of one per episode). When an episode ends, the
next session starts in its slot on the following turn (episode-level continuous batching), so the
batch stays full until the sessions run out. Each slot owns one environment, made once.

The policy is any function from a list of prompts (chat messages, or raw-text strings) to as many
replies, so this module knows nothing about models (the tests drive it with scripted policies too).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autorl.errors import ConfigError

SAFETY_STEPS = 1000
"""An episode the environment never ends is stopped here (the env should enforce max_steps)."""


@dataclass(frozen=True)
class Reply:
    """One policy reply: the raw text and how many tokens it cost."""

    text: str
    tokens: int = 0


Messages = list[dict[str, str]]
Prompt = Messages | str
"""Chat messages (the generator applies the chat template) or raw text (sent as it is)."""
Policy = Callable[[list[Prompt]], Sequence[Reply]]
ProgressFn = Callable[[int, int], None]


@dataclass
class Episode:
    """One session played to its end: everything the trajectory file records."""

    index: int
    session_id: str
    observations: list[str]
    replies: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    parsed: list[bool] = field(default_factory=list)
    """Per step: did ``extract_action`` find an action in the reply."""
    valid: list[bool] = field(default_factory=list)
    """Per step: parsed and accepted by the environment (``info["valid"]``, True if absent)."""
    rewards: list[float] = field(default_factory=list)
    done: bool = False
    success: bool = False
    tokens: int = 0
    final_info: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    stopped_by_evaluator: bool = False
    reset_info: dict[str, Any] = field(default_factory=dict)
    """What ``env.reset`` returned with the first observation (not in the trajectory file)."""

    @property
    def steps(self) -> int:
        return len(self.actions)

    @property
    def reward(self) -> float:
        """The episode's return: the sum of its step rewards."""
        return float(sum(self.rewards))

    def record(self) -> dict[str, Any]:
        """The JSON line of this episode in ``trajectories.jsonl``."""
        return {
            "index": self.index,
            "session_id": self.session_id,
            "success": self.success,
            "reward": self.reward,
            "steps": self.steps,
            "done": self.done,
            "observations": self.observations,
            "replies": self.replies,
            "actions": self.actions,
            "parsed": self.parsed,
            "valid": self.valid,
            "rewards": self.rewards,
            "generated_tokens": self.tokens,
            "stopped_by_evaluator": self.stopped_by_evaluator,
            "metrics": self.metrics,
            "final_info": self.final_info,
        }


def fallback_action(reply: str) -> str:
    """What is sent when no action can be read: the reply's first non-empty line, so the
    environment itself says why it is invalid (and the step counts)."""
    for line in reply.splitlines():
        if line.strip():
            return line.strip()
    return reply.strip()


@dataclass
class Lockstep:
    """Plays ``sessions`` with ``policy``, ``batch_size`` episodes at a time."""

    make_env: Callable[[], Any]
    policy: Policy
    build_messages: Callable[..., Prompt]
    extract_action: Callable[[str], str | None]
    batch_size: int = 16
    history_window: int = 4
    episode_metrics: Callable[[dict[str, Any]], Mapping[str, float]] | None = None
    progress: ProgressFn | None = None
    prompt_info: bool = False
    """Pass each episode's reset info to ``build_messages`` (``info=...``)."""
    on_episode: Callable[[Episode], None] | None = None
    max_steps: int = SAFETY_STEPS
    turns: int = 0
    """Policy calls made so far (one per turn, whatever the number of live episodes)."""
    envs_made: int = 0

    def run(self, sessions: Sequence[str]) -> list[Episode]:
        """Every session played to its end, returned in the order of ``sessions``."""
        total = len(sessions)
        pending = deque(enumerate(sessions))
        envs = [self._new_env() for _ in range(min(self.batch_size, total))]
        live: dict[int, Episode] = {}
        finished: list[Episode] = []
        if self.progress is not None:
            self.progress(0, total)
        for slot in range(len(envs)):
            live[slot] = self._start(envs[slot], *pending.popleft())
        while live:
            slots = sorted(live)
            prompts = [self._prompt(live[s]) for s in slots]
            replies = list(self.policy(prompts))
            self.turns += 1
            if self.progress is not None:  # every turn: the harness's deadline is checked here
                self.progress(len(finished), total)
            if len(replies) != len(prompts):
                raise RuntimeError(
                    f"the policy returned {len(replies)} replies for {len(prompts)} prompts"
                )
            for slot, reply in zip(slots, replies, strict=True):
                episode = live[slot]
                self._step(envs[slot], episode, reply)
                if not episode.done:
                    continue
                finished.append(episode)
                del live[slot]
                if self.on_episode is not None:
                    self.on_episode(episode)
                if self.progress is not None:
                    self.progress(len(finished), total)
                if pending:
                    live[slot] = self._start(envs[slot], *pending.popleft())
        return sorted(finished, key=lambda e: e.index)

    def _new_env(self) -> Any:
        self.envs_made += 1
        return self.make_env()

    def _start(self, env: Any, index: int, session_id: str) -> Episode:
        try:
            observation, info = env.reset(session_id)
        except KeyError as exc:
            raise ConfigError(
                f"evaluator 'rollout': the environment cannot reset to eval session "
                f"{session_id!r} ({exc})",
                hint="the protocol's make_env must build an environment over the sessions "
                "that load_sessions returns",
            ) from None
        return Episode(
            index=index,
            session_id=session_id,
            observations=[str(observation)],
            reset_info=dict(info or {}),
        )

    def _prompt(self, episode: Episode) -> Prompt:
        observations, actions = list(episode.observations), list(episode.actions)
        if self.prompt_info:
            return self.build_messages(
                observations, actions, self.history_window, info=episode.reset_info
            )
        return self.build_messages(observations, actions, self.history_window)

    def _step(self, env: Any, episode: Episode, reply: Reply) -> None:
        action = self.extract_action(reply.text)
        parsed = action is not None
        sent = action if action is not None else fallback_action(reply.text)
        observation, reward, done, info = env.step(sent)
        info = dict(info or {})
        episode.replies.append(reply.text)
        episode.actions.append(sent)
        episode.parsed.append(parsed)
        episode.valid.append(parsed and bool(info.get("valid", True)))
        episode.rewards.append(float(reward))
        episode.observations.append(str(observation))
        episode.tokens += int(reply.tokens)
        if not done and episode.steps >= self.max_steps:
            done, episode.stopped_by_evaluator = True, True
        if done:
            self._finish(episode, info)

    def _finish(self, episode: Episode, info: dict[str, Any]) -> None:
        episode.done = True
        episode.success = bool(info.get("success", False)) and not episode.stopped_by_evaluator
        episode.final_info = info
        if self.episode_metrics is not None:
            episode.metrics = {k: float(v) for k, v in dict(self.episode_metrics(info)).items()}
