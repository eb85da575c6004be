"""Find and load plugins from the ``autorl.plugins`` entry-point group, one at a time.

One broken plugin must never brick the CLI: each entry point is imported and registered on its
own; a failure is recorded (and shown by ``autorl plugins doctor``) unless strict mode is on.
Built-in components ship as an entry point of the core distribution, so they can be blocked too.

Environment variables:

- ``AUTORL_STRICT_PLUGINS=1``: any plugin failure raises (CI, plugin authors).
- ``AUTORL_PLUGINS=a,b``: load only these plugins (entry-point names).
- ``AUTORL_BLOCK_PLUGINS=a,b``: never load these.
- ``AUTORL_TRACE_PLUGINS=1``: print every hook call to stderr (pluggy tracing).
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

import pluggy

from autorl import hookspecs
from autorl.errors import PluginError

ENTRY_POINT_GROUP = "autorl.plugins"


@dataclass(frozen=True)
class PluginInfo:
    """What the loader knows about one plugin, loaded or not."""

    name: str
    module: str
    distribution: str | None = None
    version: str | None = None
    status: str = "loaded"
    """``loaded``, ``failed``, ``blocked`` or ``skipped`` (not in the allow-list)."""
    error: str | None = None
    """One line: the exception type and message."""
    details: str | None = None
    """The traceback, for ``autorl plugins doctor``."""


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def strict_mode() -> bool:
    return os.environ.get("AUTORL_STRICT_PLUGINS", "").lower() in {
        "1",
        "true",
        "yes",
        "on",
    }


def new_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    if os.environ.get("AUTORL_TRACE_PLUGINS"):
        pm.trace.root.setwriter(lambda line: sys.stderr.write(line))
        pm.enable_tracing()
    return pm


def _describe(exc: BaseException) -> tuple[str, str]:
    return f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc)).rstrip()


def register_module(
    pm: pluggy.PluginManager, module: ModuleType | Any, name: str, **info: Any
) -> PluginInfo:
    """Register one hookimpl module; validate it; undo the registration if it is broken."""
    module_name = getattr(module, "__name__", repr(module))
    try:
        pm.register(module, name=name)
    except Exception as exc:
        error, details = _describe(exc)
        return PluginInfo(name, module_name, status="failed", error=error, details=details, **info)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        pm.unregister(name=name)
        error, details = _describe(exc)
        return PluginInfo(name, module_name, status="failed", error=error, details=details, **info)
    return PluginInfo(name, module_name, **info)


def _dist_info(ep: EntryPoint) -> dict[str, Any]:
    dist = getattr(ep, "dist", None)
    return {"distribution": dist.name if dist else None, "version": dist.version if dist else None}


def _load_entry_point(pm: pluggy.PluginManager, ep: EntryPoint) -> PluginInfo:
    info = _dist_info(ep)
    try:
        module = ep.load()
    except Exception as exc:
        error, details = _describe(exc)
        error += _entry_point_fix(ep, exc)
        return PluginInfo(ep.name, ep.value, status="failed", error=error, details=details, **info)
    return register_module(pm, module, ep.name, **info)


def _entry_point_fix(ep: EntryPoint, exc: BaseException) -> str:
    """When the entry point names a module its own distribution lacks, say which line of
    which ``pyproject.toml`` to fix (installing the package again would not help)."""
    module = ep.value.partition(":")[0].strip()
    missing = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or not missing or not module.startswith(missing):
        return ""
    dist = getattr(ep, "dist", None)
    owner = f"{dist.name}'s" if dist else "its"
    return (
        f" (the entry point {ep.name} = {ep.value!r} names a module that does not exist: fix "
        f'that line under [project.entry-points."{ENTRY_POINT_GROUP}"] in {owner} '
        "pyproject.toml, then reinstall it)"
    )


def _where(details: str | None) -> str:
    """The innermost ``File "...", line N`` of a traceback, to say where a plugin failed."""
    frames = [
        line.strip() for line in (details or "").splitlines() if line.strip().startswith("File ")
    ]
    return f"\n  at {frames[-1]}" if frames else ""


def load_entry_points(pm: pluggy.PluginManager) -> list[PluginInfo]:
    """Load every plugin of the group, honouring the allow-list, block-list and strict mode."""
    allow = _env_list("AUTORL_PLUGINS")
    block = _env_list("AUTORL_BLOCK_PLUGINS") or set()
    seen: set[str] = set()
    infos: list[PluginInfo] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(ep.name)
        if ep.name in block:
            infos.append(PluginInfo(ep.name, ep.value, status="blocked", **_dist_info(ep)))
            continue
        if allow is not None and ep.name not in allow:
            infos.append(PluginInfo(ep.name, ep.value, status="skipped", **_dist_info(ep)))
            continue
        info = _load_entry_point(pm, ep)
        if info.status == "failed" and strict_mode():
            raise PluginError(
                f"plugin {info.name!r} ({info.module}) failed to load: {info.error}"
                + _where(info.details),
                hint="fix or uninstall the plugin, or unset AUTORL_STRICT_PLUGINS "
                "(then 'autorl plugins doctor' shows its traceback)",
            )
        infos.append(info)
    return infos
