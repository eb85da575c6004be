"""The ``redteam`` agent's adapter: validates the targets, copies the attack script, runs it.

Not a real agent: a security self-test for sandbox authors and CI. The test that runs it knows
host facts (held-out paths, the harness pid, a host port, fake secrets) and passes them as the
``targets`` option; the script (``attacks.py``, standard library only) tries every attack from
inside the sandbox and writes ``code/redteam/results.json``. See the README for the schema.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.types import AgentContext, AgentLaunch
from autorl_agent_redteam import attacks

SCRIPT = Path(attacks.__file__).resolve()
DIRECTORY = "code/redteam"
ARGV_TAIL = (f"{DIRECTORY}/attacks.py", "--targets", f"{DIRECTORY}/targets.json")
OPTIONS = {"targets": "mapping of host facts the attacks aim at (or a path to a JSON file)"}
MIN_SECRET = 6
STALE = ("results.json", "heartbeat", "daemon.pid")


def _hint() -> str:
    return "targets keys: " + "; ".join(f"{k} ({h})" for k, (_, _, h) in attacks.SETTINGS.items())


def _fail(key: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(
        f"agent 'redteam': targets.{key}={value!r} is not {expected}",
        hint=f"{key}: {attacks.SETTINGS[key][2]}",
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check(key: str, value: Any) -> Any:
    kind = attacks.SETTINGS[key][0]
    if kind in ("paths", "names", "secrets"):
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
            raise _fail(key, value, "a list of non-empty strings")
        value = list(value)
        if kind == "paths" and not all(os.path.isabs(v) for v in value):
            raise _fail(key, value, "a list of absolute host paths")
        if kind == "names":
            unknown = [v for v in value if v not in attacks.ATTACK_NAMES]
            if unknown:
                raise ConfigError(
                    f"agent 'redteam': targets.{key} names unknown attacks {unknown}",
                    hint="attacks: " + ", ".join(attacks.ATTACK_NAMES),
                )
        if kind == "secrets" and any(len(v) < MIN_SECRET for v in value):
            raise _fail(key, value, f"a list of strings of {MIN_SECRET} characters or more")
        return value
    if kind == "ports":
        if not isinstance(value, list | tuple) or not all(
            _is_int(v) and 0 < v < 65536 for v in value
        ):
            raise _fail(key, value, "a list of TCP ports (1-65535)")
        return list(value)
    if kind == "pid":
        if value is not None and not (_is_int(value) and value > 1):
            raise _fail(key, value, "a process id above 1 (or null)")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise _fail(key, value, "true or false")
        return value
    if kind == "int":
        lowest = -1 if key == "kill_parents" else (1 if key == "walk_max_entries" else 0)
        if not _is_int(value) or value < lowest:
            raise _fail(key, value, f"an integer >= {lowest}")
        return value
    positive = key == "attack_timeout"
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value < 0
        or (positive and value == 0)
    ):
        raise _fail(key, value, "a positive number" if positive else "a number >= 0")
    return value


def validate_targets(raw: Any) -> dict[str, Any]:
    """The ``targets`` option (a mapping, or a path to a JSON file) -> settings with defaults."""
    if isinstance(raw, str | os.PathLike):
        try:
            raw = json.loads(Path(raw).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"agent 'redteam': targets file {str(raw)!r} cannot be read as JSON ({exc})",
                hint="pass a mapping (TOML table / JSON object) or the path of a JSON file",
            ) from None
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"agent 'redteam': targets must be a mapping, got {type(raw).__name__}",
            hint=_hint(),
        )
    unknown = sorted(str(k) for k in raw if k not in attacks.SETTINGS)
    if unknown:
        raise ConfigError(f"agent 'redteam': unknown targets keys {unknown}", hint=_hint())
    settings = {
        key: (list(default) if isinstance(default, list) else default)
        for key, (_, default, _) in attacks.SETTINGS.items()
    }
    for key, value in raw.items():
        settings[key] = _check(key, value)
    return settings


def validate_options(options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(str(k) for k in options if k not in OPTIONS)
    if unknown:
        raise ConfigError(
            f"agent 'redteam': unknown options {unknown}",
            hint="options: " + "; ".join(f"{k} ({h})" for k, h in OPTIONS.items()),
        )
    return validate_targets(options.get("targets", {}))


def read_results(workspace: str | Path) -> list[dict[str, Any]]:
    """The script's ``results.json`` (for the test that ran it); [] when none was written."""
    path = Path(workspace) / DIRECTORY / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list")
    return data


def outcomes(results: list[dict[str, Any]]) -> dict[str, str]:
    """``{attack: outcome}`` of a results list."""
    return {r["attack"]: r["outcome"] for r in results}


class RedteamAgent:
    """Security self-test: attacks the harness from inside the sandbox. Trains nothing."""

    name = "redteam"

    def launch(self, ctx: AgentContext) -> AgentLaunch:
        settings = validate_options(ctx.options)
        directory = Path(ctx.workspace) / DIRECTORY
        directory.mkdir(parents=True, exist_ok=True)
        for name in STALE:
            (directory / name).unlink(missing_ok=True)
        shutil.rmtree(directory / "markers", ignore_errors=True)
        shutil.copyfile(SCRIPT, directory / "attacks.py")
        (directory / "targets.json").write_text(
            json.dumps(settings, indent=2) + "\n", encoding="utf-8"
        )
        return AgentLaunch(argv=(ctx.python, *ARGV_TAIL), env={})
