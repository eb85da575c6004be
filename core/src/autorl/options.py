"""Run options reach every component one way: a typed pydantic model, one error format.

A task, an evaluator or an agent declares ``class Options(OptionsModel)`` and calls
``parse_options(Options, raw, who="task 'gsm8k'")`` on what the run gives it
(``TaskContext.options``, ``EvalRequest.config``, ``AgentContext.options``). Unknown keys are
refused with the closest known name, wrong types and out-of-range values name the option,
what was given and what is allowed; values are parsed once. Components are constructed
without arguments: no option is ever passed to a constructor.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from annotated_types import Ge, Gt
from pydantic import BaseModel, ConfigDict, Strict, ValidationError

from autorl.errors import ConfigError

M = TypeVar("M", bound=BaseModel)
PositiveInt = Annotated[int, Strict(), Gt(0)]
"""An integer > 0; ``true`` or ``"10"`` are refused (configs are typed: TOML, YAML, JSON)."""
NonNegativeInt = Annotated[int, Strict(), Ge(0)]


class OptionsModel(BaseModel):
    """Base of every component's options: unknown keys are errors, models are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def type_name(annotation: Any) -> str:
    """A type as a user reads it: ``positive integer or none``, ``one of 'a', 'b'``."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        base, *meta = args
        if base is int and any(getattr(m, "gt", None) == 0 for m in meta):
            return "positive integer"
        if base is int and any(getattr(m, "ge", None) == 0 for m in meta):
            return "integer >= 0"
        return type_name(base)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (Union, UnionType):
        names = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or none" if type(None) in args else "")
    if origin in (list, tuple):
        return "list"
    if origin is dict:
        return "table"
    return {int: "integer", float: "number", str: "text", bool: "true/false", Path: "path"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def describe(model: type[BaseModel]) -> dict[str, str]:
    """option -> "type (default ...): description", for hints and ``autorl show``."""
    found = {}
    for name, field in model.model_fields.items():
        kind = type_name(field.annotation)
        if (
            field.metadata
            and kind == "integer"
            and any(getattr(m, "gt", None) == 0 for m in field.metadata)
        ):
            kind = "positive integer"
        default = "required" if field.is_required() else f"default {field.default!r}"
        text = f"{kind} ({default})"
        if field.description:
            text += f": {field.description}"
        found[name] = text
    return found


def _explain(error: dict[str, Any], known: list[str]) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "(options)"
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(error["loc"][-1]), known, n=1)
        return f"unknown option {where!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    given = f" (got {error['input']!r})" if "input" in error and error["type"] != "missing" else ""
    return f"{where}: {error['msg']}{given}"


def parse_options(model: type[M], raw: Mapping[str, Any] | None, *, who: str) -> M:
    """``raw`` validated into ``model``; a :class:`ConfigError` naming every problem."""
    try:
        return model.model_validate(dict(raw or {}))
    except ValidationError as exc:
        known = list(model.model_fields)
        problems = [_explain(e, known) for e in exc.errors()]
        listing = "; ".join(f"{k}: {v}" for k, v in describe(model).items())
        raise ConfigError(
            f"{who}: " + "; ".join(problems), hint=f"options of {who}: {listing}"
        ) from None
