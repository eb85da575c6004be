"""Driver names (``<backend>/<model>``) and building a ready-to-use driver from one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autorl_llm.drivers.calllog import DriverCallLog, LoggingDriver
from autorl_llm.drivers.cassette import MODES, Cassette, RecordingDriver, ReplayingDriver
from autorl_llm.drivers.errors import DriverConfigError


def parse_driver_name(name: str) -> tuple[str, str]:
    """Split ``openai/gpt-5.2`` into (backend, model); the model may itself hold '/'."""
    backend, sep, model = (name or "").strip().partition("/")
    if not sep or not backend or not model:
        raise DriverConfigError(
            f"driver name {name!r} is not <backend>/<model>",
            hint="for example openai/gpt-5.2, anthropic/claude-sonnet-4-6, "
            "vllm/Qwen/Qwen3-32B or scripted/path/to/script.yaml",
        )
    return backend, model


def open_driver(
    name: str,
    *,
    registry: Any | None = None,
    cassette: str | Path | None = None,
    cassette_mode: str = "record",
    call_log: str | Path | DriverCallLog | None = None,
    **options: Any,
) -> Any:
    """Build the driver ``name`` through the registry, optionally behind a cassette and a log.

    ``cassette_mode``: ``record`` (call the backend, append to the cassette), ``replay`` (answer
    only from the cassette: no backend is created, so no key or network is needed) or ``auto``
    (replay what is recorded, call and record the rest).
    """
    backend, model = parse_driver_name(name)
    if cassette_mode not in MODES:
        raise DriverConfigError(f"cassette_mode {cassette_mode!r} is not one of {', '.join(MODES)}")

    def live() -> Any:
        nonlocal registry
        if registry is None:
            from autorl.registry import get_registry

            registry = get_registry()
        return registry.create("driver", backend, model=model, **options)

    if cassette is None:
        driver = live()
    elif cassette_mode == "replay":
        driver = ReplayingDriver(cassette, backend, model)
    elif cassette_mode == "auto":
        driver = ReplayingDriver(Cassette(cassette), backend, model, fallback=live())
    else:
        driver = RecordingDriver(live(), cassette)
    if call_log is not None:
        driver = LoggingDriver(driver, call_log)
    return driver
