"""The evaluator's options: the keys it owns, and the rest forwarded to the task's ``make_env``.

``evaluator_config`` mixes two kinds of keys. The evaluator owns :data:`DEFAULTS` (decoding,
batching, the prompt window). Every other key belongs to the task and reaches
``make_env(config, eval_path)`` untouched, so a task passes its own settings (``max_steps``,
``catalog_path``...) without the evaluator knowing them. A task that declares ``ENV_OPTIONS`` in
its protocol module gets those names checked; a task that declares none still gets a typo of an
evaluator key (``max_new_token``) refused.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autorl.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "protocol": None,
    "max_new_tokens": 64,
    "batch_size": 16,
    "temperature": 0.0,
    "history_window": 4,
    "device": "auto",
    "limit": None,
    "prefix_cache": True,
    "order_seed": None,
}
DESCRIPTIONS: dict[str, str] = {
    "protocol": "importable protocol module of the installed task package (required)",
    "max_new_tokens": "token limit of one reply (64)",
    "batch_size": "episodes played at once; one batched generation per turn (16)",
    "temperature": "0 = greedy (default); > 0 samples, seeded by the request's seed",
    "history_window": "recent observations shown in full in the prompt (4)",
    "device": "auto (a CUDA GPU when present), cpu, cuda, cuda:1...",
    "limit": "play only the first N sessions (None = all)",
    "prefix_cache": "CPU: compute the prompts' shared prefix once (true); vLLM does it itself",
    "order_seed": "play the sessions in an order shuffled by this seed (None = file order): "
    "the same checkpoint under another order measures the evaluation's noise",
}


@dataclass(frozen=True)
class Settings:
    """The evaluator's own, validated options."""

    protocol: str
    max_new_tokens: int
    batch_size: int
    temperature: float
    history_window: int
    device: str
    limit: int | None
    prefix_cache: bool = True
    order_seed: int | None = None


def _positive_int(key: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ConfigError(
            f"evaluator 'rollout': {key}={value!r} must be {what}",
            hint=f"{key}: {DESCRIPTIONS[key]}",
        )
    return value


def parse_settings(config: Mapping[str, Any]) -> Settings:
    """The evaluator-owned keys of ``config`` over :data:`DEFAULTS`, validated."""
    merged = {**DEFAULTS, **{k: v for k, v in config.items() if k in DEFAULTS}}
    protocol = merged["protocol"]
    if not isinstance(protocol, str) or not protocol.strip():
        raise ConfigError(
            f"evaluator 'rollout': protocol={protocol!r} must name the task's protocol module",
            hint="the task sets evaluator_config['protocol'], e.g. 'autorl_task_webshop.protocol'",
        )
    temperature = merged["temperature"]
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or temperature < 0:
        raise ConfigError(
            f"evaluator 'rollout': temperature={temperature!r} must be a number >= 0",
            hint=DESCRIPTIONS["temperature"],
        )
    device = merged["device"]
    if not isinstance(device, str) or not device:
        raise ConfigError(
            f"evaluator 'rollout': device={device!r} must be a string",
            hint=DESCRIPTIONS["device"],
        )
    limit = merged["limit"]
    if not isinstance(merged["prefix_cache"], bool):
        raise ConfigError(
            f"evaluator 'rollout': prefix_cache={merged['prefix_cache']!r} must be true or false",
            hint=DESCRIPTIONS["prefix_cache"],
        )
    order_seed = merged["order_seed"]
    if order_seed is not None and (isinstance(order_seed, bool) or not isinstance(order_seed, int)):
        raise ConfigError(
            f"evaluator 'rollout': order_seed={order_seed!r} must be an integer or None",
            hint=DESCRIPTIONS["order_seed"],
        )
    return Settings(
        protocol=protocol.strip(),
        max_new_tokens=_positive_int("max_new_tokens", merged["max_new_tokens"]),
        batch_size=_positive_int("batch_size", merged["batch_size"]),
        temperature=float(temperature),
        history_window=_positive_int("history_window", merged["history_window"], minimum=0),
        device=device,
        limit=None if limit is None else _positive_int("limit", limit),
        prefix_cache=merged["prefix_cache"],
        order_seed=order_seed,
    )


def _known(env_options: Mapping[str, str] | None) -> str:
    own = "; ".join(f"{k}: {v}" for k, v in DESCRIPTIONS.items())
    if not env_options:
        return f"evaluator options: {own}"
    task = "; ".join(f"{k}: {v}" if v else k for k, v in env_options.items())
    return f"evaluator options: {own}. Task options (to make_env): {task}"


def env_config(
    config: Mapping[str, Any], env_options: Mapping[str, str] | None, protocol: str = "the task"
) -> dict[str, Any]:
    """The keys of ``config`` the evaluator does not own: what ``make_env`` receives.

    With ``env_options`` declared, a key outside both sets is an error. Without, any key is
    forwarded, except one that looks like a misspelt evaluator key.
    """
    rest = {k: v for k, v in config.items() if k not in DEFAULTS}
    if env_options is not None:
        unknown = sorted(set(rest) - set(env_options))
        if unknown:
            raise ConfigError(
                f"evaluator 'rollout': unknown option(s) {', '.join(map(repr, unknown))} "
                f"(protocol {protocol})",
                hint=_known(env_options),
            )
        return rest
    for key in rest:
        close = difflib.get_close_matches(key, list(DEFAULTS), n=1, cutoff=0.8)
        if close:
            raise ConfigError(
                f"evaluator 'rollout': unknown option {key!r}: did you mean {close[0]!r}?",
                hint=_known(None) + f". Other keys go to {protocol}.make_env",
            )
    return rest
