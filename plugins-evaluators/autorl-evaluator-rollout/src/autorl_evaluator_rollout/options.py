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
from typing import Any

from pydantic import Field, StrictBool, StrictInt

from autorl.errors import ConfigError
from autorl.options import NonNegativeInt, OptionsModel, PositiveInt, parse_options


class Options(OptionsModel):
    """The evaluator's own options (the other keys of the config go to the task's env)."""

    max_new_tokens: PositiveInt = Field(64, description="token limit of one reply")
    batch_size: PositiveInt = Field(
        16, description="episodes played at once; one batched generation per turn"
    )
    temperature: float = Field(
        0.0, ge=0, description="0 = greedy; > 0 samples, seeded by the request's seed"
    )
    history_window: NonNegativeInt = Field(
        4, description="recent observations shown in full in the prompt"
    )
    device: str = Field("auto", description="auto (a CUDA GPU when present), cpu, cuda:1...")
    limit: PositiveInt | None = Field(None, description="play only the first N sessions")
    prefix_cache: StrictBool = Field(
        True, description="CPU: compute the prompts' shared prefix once; vLLM does it itself"
    )
    order_seed: StrictInt | None = Field(
        None,
        description="play the sessions in an order shuffled by this seed (None = file order): "
        "the same checkpoint under another order measures the evaluation's noise",
    )


Settings = Options
DEFAULTS: dict[str, Any] = {name: f.default for name, f in Options.model_fields.items()}
DESCRIPTIONS: dict[str, str] = {n: f.description or "" for n, f in Options.model_fields.items()}


def parse_settings(config: Mapping[str, Any]) -> Options:
    """The evaluator-owned keys of ``config`` over the defaults, validated."""
    owned = {k: v for k, v in config.items() if k in Options.model_fields}
    return parse_options(Options, owned, who="evaluator 'rollout'")


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
