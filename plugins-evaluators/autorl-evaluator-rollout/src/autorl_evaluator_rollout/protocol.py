"""The task's ``interactive`` contract
(:class:`autorl_evaluator_rollout.contract.InteractiveContract`), as the engine loaded it from
the installed task package, with its optional parts checked.

What an interactive task provides (see docs/evaluators/rollout.md):

- ``load_sessions(eval_path) -> list[str]``: the eval session ids, in order;
- ``make_env(config, eval_path) -> env``: a fresh environment able to reset to any eval session;
  called once per concurrent episode slot (the module caches heavy shared state itself);
- ``build_messages(observations, actions, history_window) -> list[dict] | str``: the prompt,
  chat messages (through the model's chat template) or a ``str`` (raw text, no template, as a
  completion model gets it); a ``build_messages`` with a parameter named ``info`` also gets the
  info dict ``env.reset`` returned for the episode (``info=...``: a prompt that depends on the
  session, e.g. few-shot examples chosen by its task type);
- ``extract_action(reply) -> str | None``: the action in a reply (None = unparseable).

Optional extensions (a module without them works):

- ``episode_metrics(info) -> dict[str, float]``: extra numbers per finished episode;
- ``ENV_OPTIONS``: the names (a mapping name -> description, or any collection of names) of the
  ``evaluator_config`` keys the task forwards to ``make_env``; when declared, any other key that
  the evaluator does not own is refused, so a typo fails loudly;
- ``STOP``: strings that end a reply early (e.g. ``("\\n",)`` for one-line actions).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from autorl.errors import ConfigError


@dataclass(frozen=True)
class Protocol:
    """The checked callables of one protocol module."""

    name: str
    load_sessions: Callable[..., Any]
    make_env: Callable[..., Any]
    build_messages: Callable[..., list[dict[str, str]] | str]
    extract_action: Callable[[str], str | None]
    episode_metrics: Callable[[dict[str, Any]], Mapping[str, float]] | None = None
    env_options: Mapping[str, str] | None = None
    """Declared ``make_env`` keys (name -> description), or None when the task declares none."""
    stop: tuple[str, ...] = field(default_factory=tuple)
    messages_take_info: bool = False
    """``build_messages`` has an ``info`` parameter: it gets the episode's reset info."""


def takes_info(build_messages: Callable[..., Any]) -> bool:
    """Whether ``build_messages`` declares a parameter named ``info``."""
    try:
        return "info" in inspect.signature(build_messages).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def _env_options(name: str, module: Any) -> Mapping[str, str] | None:
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


def _stop(name: str, module: Any) -> tuple[str, ...]:
    stop = getattr(module, "STOP", ())
    if isinstance(stop, str) or not all(isinstance(s, str) for s in stop):
        raise ConfigError(
            f"evaluator 'rollout': {name}.STOP must be a tuple of strings, got {stop!r}",
            hint='declare e.g. STOP = ("\\n",)',
        )
    return tuple(s for s in stop if s)


def load_protocol(ref: str) -> Protocol:
    """The task's ``interactive`` contract ``ref``, loaded and checked (tests; runs get it in
    ``EvalRequest.contract`` from the engine)."""
    from autorl.contracts import load_contract
    from autorl_evaluator_rollout.contract import INTERACTIVE

    return from_contract(load_contract(INTERACTIVE, ref, who="evaluator 'rollout'"), ref)


def from_contract(module: Any, name: str) -> Protocol:
    """The checked callables of a loaded ``interactive`` contract, optional parts included."""
    if module is None:
        raise ConfigError(
            "evaluator 'rollout' needs the task's 'interactive' contract in EvalRequest.contract",
            hint="runs load it from the task (TaskSpec.contract); outside a run use "
            "autorl_evaluator_rollout.protocol.load_protocol('pkg.module')",
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
        messages_take_info=takes_info(module.build_messages),
    )
