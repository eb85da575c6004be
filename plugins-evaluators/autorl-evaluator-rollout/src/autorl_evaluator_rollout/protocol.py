"""The task's protocol module: imported from the installed task package and checked.

Contract (A), what an interactive task provides (see docs/evaluators/rollout.md):

- ``load_sessions(eval_path) -> list[str]``: the eval session ids, in order;
- ``make_env(config, eval_path) -> env``: a fresh environment able to reset to any eval session;
  called once per concurrent episode slot (the module caches heavy shared state itself);
- ``build_messages(observations, actions, history_window) -> list[dict]``: the chat prompt;
- ``extract_action(reply) -> str | None``: the action in a reply (None = unparseable).

Optional extensions (a module without them works):

- ``episode_metrics(info) -> dict[str, float]``: extra numbers per finished episode;
- ``ENV_OPTIONS``: the names (a mapping name -> description, or any collection of names) of the
  ``evaluator_config`` keys the task forwards to ``make_env``; when declared, any other key that
  the evaluator does not own is refused, so a typo fails loudly;
- ``STOP``: strings that end a reply early (e.g. ``("\\n",)`` for one-line actions).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from autorl.errors import ConfigError

REQUIRED = ("load_sessions", "make_env", "build_messages", "extract_action")
OPTIONAL = ("episode_metrics", "ENV_OPTIONS", "STOP")


@dataclass(frozen=True)
class Protocol:
    """The checked callables of one protocol module."""

    name: str
    load_sessions: Callable[..., Any]
    make_env: Callable[..., Any]
    build_messages: Callable[..., list[dict[str, str]]]
    extract_action: Callable[[str], str | None]
    episode_metrics: Callable[[dict[str, Any]], Mapping[str, float]] | None = None
    env_options: Mapping[str, str] | None = None
    """Declared ``make_env`` keys (name -> description), or None when the task declares none."""
    stop: tuple[str, ...] = field(default_factory=tuple)


def _env_options(name: str, module: ModuleType) -> Mapping[str, str] | None:
    declared = getattr(module, "ENV_OPTIONS", None)
    if declared is None:
        return None
    if isinstance(declared, Mapping):
        return {str(k): str(v) for k, v in declared.items()}
    if isinstance(declared, Collection) and not isinstance(declared, str):
        return {str(k): "" for k in declared}
    raise ConfigError(
        f"evaluator 'rollout': {name}.ENV_OPTIONS must be a mapping or a collection of names, "
        f"got {type(declared).__name__}",
        hint="declare e.g. ENV_OPTIONS = {'max_steps': 'steps per episode'}",
    )


def _stop(name: str, module: ModuleType) -> tuple[str, ...]:
    stop = getattr(module, "STOP", ())
    if isinstance(stop, str) or not all(isinstance(s, str) for s in stop):
        raise ConfigError(
            f"evaluator 'rollout': {name}.STOP must be a tuple of strings, got {stop!r}",
            hint='declare e.g. STOP = ("\\n",)',
        )
    return tuple(s for s in stop if s)


def load_protocol(name: str) -> Protocol:
    """Import ``name`` and check it has every function the evaluator calls."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"evaluator 'rollout': protocol={name!r} must name an importable module",
            hint="the task sets evaluator_config['protocol'], e.g. 'autorl_task_webshop.protocol'",
        )
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(
            f"evaluator 'rollout': cannot import protocol module {name!r} ({exc})",
            hint="install the task package that provides it (e.g. pip install "
            "autorl-task-webshop) or fix evaluator_config['protocol']",
        ) from None
    missing = [f for f in REQUIRED if not callable(getattr(module, f, None))]
    if missing:
        raise ConfigError(
            f"evaluator 'rollout': protocol module {name!r} lacks {', '.join(missing)}",
            hint=f"a protocol module defines {', '.join(REQUIRED)} "
            "(contract A in docs/evaluators/rollout.md)",
        )
    metrics = getattr(module, "episode_metrics", None)
    if metrics is not None and not callable(metrics):
        raise ConfigError(
            f"evaluator 'rollout': {name}.episode_metrics must be a function of the final info"
        )
    return Protocol(
        name=name,
        load_sessions=module.load_sessions,
        make_env=module.make_env,
        build_messages=module.build_messages,
        extract_action=module.extract_action,
        episode_metrics=metrics,
        env_options=_env_options(name, module),
        stop=_stop(name, module),
    )
