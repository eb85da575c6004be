"""The ALFWorld text environment over a fixed set of games (gym-like, one episode at a time).

Each game runs in the real engine: TextWorld's PDDL backend (``textworld.start`` on a
``game.tw-pddl`` file) with ALFWorld's own wrappers (``AlfredDemangler`` names objects
``apple 1``, ``AlfredInfos`` adds the game file, ``AlfredExpert`` the hand-coded expert's next
action). On top of it, what the ReAct protocol adds: ``think: ...`` actions answer ``OK.`` and
use a step; the episode ends when the goal is reached (success) or after ``max_steps`` steps.
An action the engine does not know answers ``Nothing happens.`` and uses a step, as in ALFWorld.
With ``verbatim=True`` it plays exactly as the reference's ReAct loop does (RD-Agent's
``autorl_bench`` ALFWorld evaluator): the action goes to the engine as it is (no white-space
folding), only a lower-case ``think:`` is a thought, observations are not stripped but cleaned
by :func:`process_ob`, and the first observation drops the first paragraph
(:func:`reference_observation`).
Needs ``textworld`` and ``alfworld``; no import of autorl (also copied into the workspace kit).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEFAULT_MAX_STEPS = 50
"""The reference protocol's step limit."""
BANNER = "-= Welcome to TextWorld, ALFRED! =-"
THINK_PREFIX = "think:"
THINK_REPLY = "OK."
ARRIVE_AT_LOC = "You arrive at loc "


def first_observation(feedback: str) -> str:
    """The reset text without the banner, as ReAct feeds it: the room, then the task line."""
    parts = [p.strip() for p in feedback.split("\n\n") if p.strip() and p.strip() != BANNER]
    return "\n".join(parts)


def reference_observation(feedback: str) -> str:
    """The first observation as the reference takes it: the first paragraph (the banner)
    dropped, the others joined by one newline."""
    return "\n".join(feedback.split("\n\n")[1:])


def process_ob(observation: str) -> str:
    """ReAct's observation cleaning: a leading ``You arrive at loc N. `` is cut."""
    if observation.startswith(ARRIVE_AT_LOC):
        observation = observation[observation.find(". ") + 2 :]
    return observation


_PARSE_CACHE: dict[tuple[Any, ...], Any] = {}


def install_parse_cache() -> None:
    """Memoise TextWorld's grammar-template parser (a pure function of the template text).

    TextWorld re-parses the same few command templates with tatsu for every admissible command
    at every step, which is most of a step's time on CPU; the cache returns a deep copy of the
    first parse, so the derived text is the same, only faster.
    """
    import copy

    from textworld.envs.pddl import textgen

    original = textgen._parse_and_convert
    if getattr(original, "_autorl_cached", False):
        return

    def cached(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted((k, v) for k, v in kwargs.items() if k != "trace")))
        if key not in _PARSE_CACHE:
            _PARSE_CACHE[key] = original(*args, **kwargs)
        return copy.deepcopy(_PARSE_CACHE[key])

    cached._autorl_cached = True  # type: ignore[attr-defined]
    textgen._parse_and_convert = cached


def install_expert_fix() -> None:
    """Let ALFWorld 0.4.2's hand-coded expert see its own ``move X to Y`` commands.

    The grammar renamed ``put X in/on Y`` to ``move X to Y`` and the expert issues ``move``,
    but its state tracking still looks for ``put`` in the last action, so after putting an
    object down it believes it still holds it (only ``pick_two_obj_and_place`` needs a second
    round, where it then loops). The expert is told the old spelling of the same action.
    """
    from alfworld.agents.expert import handcoded_expert

    policy = handcoded_expert.BasePolicy
    original = policy.update_state_tracking
    if getattr(original, "_autorl_fixed", False):
        return

    def update_state_tracking(self: Any, game_state: Any, last_action: str) -> Any:
        if last_action.startswith("move ") and " to " in last_action:
            obj, recep = last_action[len("move ") :].split(" to ", 1)
            last_action = f"put {obj} in/on {recep}"
        return original(self, game_state, last_action)

    update_state_tracking._autorl_fixed = True  # type: ignore[attr-defined]
    policy.update_state_tracking = update_state_tracking


def _start(game_file: Path, expert: bool) -> Any:
    import textworld
    from alfworld.agents.environment.alfred_tw_env import (
        AlfredDemangler,
        AlfredExpert,
        AlfredInfos,
    )

    install_parse_cache()
    extras = ["gamefile", "expert_plan"] if expert else ["gamefile"]
    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=extras)
    wrappers: list[Any] = [AlfredDemangler(), AlfredInfos]
    if expert:
        install_expert_fix()
        wrappers.append(AlfredExpert(expert_type="handcoded"))
    return textworld.start(str(game_file), request_infos=infos, wrappers=wrappers)


class AlfWorldEnv:
    """Text environment: ``reset(session_id)`` then ``step(action)`` until ``done``.

    ``games`` maps a session id to its ``game.tw-pddl``; ``reset`` of any other id raises
    KeyError. With ``expert=True`` the info dict carries ``expert_action``, the hand-coded
    expert's next action (train games only: it reads the game's ``traj_data.json``).
    ``verbatim=True``: the reference's ReAct loop exactly (see the module docstring).
    """

    def __init__(
        self,
        games: Mapping[str, str | Path],
        max_steps: int = DEFAULT_MAX_STEPS,
        expert: bool = False,
        verbatim: bool = False,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self._games = {sid: Path(path) for sid, path in games.items()}
        self.session_ids = list(self._games)
        self.max_steps = max_steps
        self.expert = expert
        self.verbatim = verbatim
        self._tw: Any = None
        self._loaded: Path | None = None
        self._session: str | None = None
        self._steps = 0
        self._done = True
        self._won = False
        self._state: Any = None

    def reset(self, session_id: str) -> tuple[str, dict[str, Any]]:
        game_file = self._games[session_id]  # KeyError: not one of this env's games
        if self._tw is None:
            self._tw = _start(game_file, self.expert)
        elif self._loaded != game_file:
            self._tw.load(str(game_file))
        self._loaded = game_file
        if self.expert:  # the hand-coded expert breaks ties with `random`: make it repeatable
            random.seed(int(hashlib.sha256(session_id.encode()).hexdigest()[:8], 16))
        self._state = self._tw.reset()
        self._session, self._steps, self._done, self._won = session_id, 0, False, False
        feedback = self._state.feedback
        if self.verbatim:
            return reference_observation(feedback), self._info(won=False)
        return first_observation(feedback), self._info(won=False)

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._session is None:
            raise RuntimeError("call reset(session_id) before step()")
        if self._done:
            return "The episode is over.", 0.0, True, self._info(won=self._won)
        action = str(action) if self.verbatim else " ".join(str(action).split())
        self._steps += 1
        won = False
        thought = action if self.verbatim else action.lower()
        if thought.startswith(THINK_PREFIX):
            # the reference also steps the engine, which answers "Nothing happens." and changes
            # nothing; then it shows "OK."
            observation, valid = THINK_REPLY, True
        else:
            valid = action in self._state["admissible_commands"]
            self._state, _, _ = self._tw.step(action)
            feedback = self._state.feedback
            observation = process_ob(feedback) if self.verbatim else feedback.strip()
            won = bool(self._state["won"])
        self._won = won
        self._done = won or self._steps >= self.max_steps
        info = {**self._info(won=won), "valid": valid}
        return observation, 1.0 if won else 0.0, self._done, info

    def _info(self, won: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "session_id": self._session,
            "steps": self._steps,
            "won": won,
            "success": won,
            "admissible_commands": list(self._state["admissible_commands"]),
        }
        if self.expert:
            plan = self._state.get("extra.expert_plan") or []
            info["expert_action"] = plan[0] if plan else None
        return info

    def close(self) -> None:
        if self._tw is not None:
            self._tw.close()
            self._tw = None
