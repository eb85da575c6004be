"""The registry facade: the only code in autorl that calls ``pm.hook``.

It collects the specs every plugin registers, records which plugin supplied each one, resolves
names (bare when unique, ``provider/name`` always), builds instances lazily from their factory
import strings and checks them against their kind's protocol.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pluggy

from autorl.errors import PluginError, RegistryError
from autorl.events import RecordContribution, RunEndEvent, RunStartEvent, SubmissionEvent
from autorl.hookspecs import REGISTRATION_HOOKS
from autorl.kinds import KINDS as KIND_TABLE
from autorl.kinds import shipped_distribution
from autorl.plugins import (
    PluginInfo,
    load_entry_points,
    new_plugin_manager,
    register_module,
)
from autorl.specs import KINDS, SPEC_TYPES, Spec


@dataclass(frozen=True)
class Entry:
    """A spec together with the plugin that supplied it."""

    spec: Spec
    provider: str

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def qualified_name(self) -> str:
        return f"{self.provider}/{self.spec.name}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "provider": self.provider,
            "qualified_name": self.qualified_name,
            "description": self.spec.description,
            "factory": self.spec.factory,
            "install": self.spec.install,
            "options": dict(self.spec.options),
            **self._typed_fields(),
        }

    def _typed_fields(self) -> dict[str, Any]:
        """A kind's own spec fields (a task's evaluator/contract/recipe, an evaluator's
        contract), so ``autorl show`` and ``list --json`` print the contracts."""
        from dataclasses import fields

        from autorl.specs import Spec

        base = {f.name for f in fields(Spec)}
        return {f.name: getattr(self.spec, f.name) for f in fields(self.spec) if f.name not in base}


@dataclass(frozen=True)
class Problem:
    """Something ``autorl plugins doctor`` must report."""

    plugin: str
    message: str
    details: str | None = None


def _installed(distribution: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(distribution)
    except PackageNotFoundError:
        return False
    return True


def import_object(target: str) -> Any:
    """Import ``"package.module:Attr"`` (``"package.module"``: the module)."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def protocol_members(protocol: type) -> set[str]:
    """Names a runtime protocol requires (``__protocol_attrs__`` only exists from Python 3.12)."""
    attrs = getattr(protocol, "__protocol_attrs__", None)
    if attrs is not None:
        return set(attrs)
    found: set[str] = set()
    for base in protocol.__mro__:
        if base is object or not getattr(base, "_is_protocol", False):
            continue
        names = [*vars(base).get("__annotations__", {}), *vars(base)]
        found.update(n for n in names if not n.startswith("_"))
    return found


class Registry:
    """Specs from all plugins, by kind; safe to share between threads after construction."""

    def __init__(self, pm: pluggy.PluginManager, plugins: Iterable[PluginInfo]) -> None:
        self._pm = pm
        self._plugins: dict[str, PluginInfo] = {p.name: p for p in plugins}
        self._entries: dict[str, list[Entry]] | None = None
        self._problems: list[Problem] = []
        self._lock = threading.Lock()

    # construction -----------------------------------------------------------------------------

    @classmethod
    def from_entry_points(cls) -> Registry:
        pm = new_plugin_manager()
        return cls(pm, load_entry_points(pm))

    @classmethod
    def empty(cls) -> Registry:
        return cls(new_plugin_manager(), [])

    def register(self, module: ModuleType | Any, name: str) -> PluginInfo:
        """Register a hookimpl module in-process (tests, notebooks); invalidates cached specs."""
        info = register_module(self._pm, module, name, distribution=None, version=None)
        self._plugins[name] = info
        self._entries = None
        if info.status == "failed":
            raise PluginError(f"plugin {name!r} is invalid: {info.error}", hint=info.details)
        return info

    # plugins ----------------------------------------------------------------------------------

    @property
    def plugins(self) -> list[PluginInfo]:
        return sorted(self._plugins.values(), key=lambda p: p.name)

    def failed_plugins(self) -> list[PluginInfo]:
        return [p for p in self.plugins if p.status == "failed"]

    def problems(self) -> list[Problem]:
        """Load failures, hooks that raised, invalid specs and name clashes."""
        self._collect()
        found = [Problem(p.name, p.error or "failed", p.details) for p in self.failed_plugins()]
        found.extend(self._problems)
        for kind in KINDS:
            by_name: dict[str, list[Entry]] = {}
            for entry in self.entries(kind):
                by_name.setdefault(entry.name, []).append(entry)
            for name, clash in by_name.items():
                if len(clash) > 1:
                    providers = " and ".join(e.provider for e in clash)
                    found.append(
                        Problem(
                            clash[1].provider,
                            f"{kind} {name!r} is supplied by {providers}; "
                            f"use {' or '.join(repr(e.qualified_name) for e in clash)}",
                        )
                    )
        return found

    # specs ------------------------------------------------------------------------------------

    def _collect(self) -> dict[str, list[Entry]]:
        with self._lock:
            if self._entries is not None:
                return self._entries
            entries: dict[str, list[Entry]] = {kind: [] for kind in KINDS}
            problems: list[Problem] = []
            for kind, hook_name in REGISTRATION_HOOKS.items():
                hook = getattr(self._pm.hook, hook_name)
                for impl in hook.get_hookimpls():
                    provider = impl.plugin_name
                    try:
                        specs = impl.function() or []
                    except Exception as exc:
                        problems.append(
                            Problem(
                                provider,
                                f"{hook_name} raised {type(exc).__name__}: {exc}",
                            )
                        )
                        continue
                    seen: set[str] = set()
                    for spec in specs:
                        if not isinstance(spec, SPEC_TYPES[kind]):
                            problems.append(
                                Problem(
                                    provider,
                                    f"{hook_name} returned {type(spec).__name__}, "
                                    f"expected {SPEC_TYPES[kind].__name__}",
                                )
                            )
                            continue
                        if spec.name in seen:
                            problems.append(
                                Problem(provider, f"{kind} {spec.name!r} registered twice")
                            )
                            continue
                        seen.add(spec.name)
                        entries[kind].append(Entry(spec, provider))
            for kind_entries in entries.values():
                kind_entries.sort(key=lambda e: (e.name, e.provider))
            self._entries, self._problems = entries, problems
            return entries

    def entries(self, kind: str) -> list[Entry]:
        self._check_kind(kind)
        return list(self._collect()[kind])

    def names(self, kind: str) -> list[str]:
        return sorted({e.name for e in self.entries(kind)})

    def get(self, kind: str, name: str) -> Entry:
        """Resolve a bare or ``provider/name`` name to one entry, or raise a helpful error."""
        entries = self.entries(kind)
        if "/" in name:
            matches = [e for e in entries if e.qualified_name == name]
        else:
            matches = [e for e in entries if e.name == name]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            options = ", ".join(repr(e.qualified_name) for e in matches)
            providers = " and ".join(e.provider for e in matches)
            raise RegistryError(
                f"{kind} {name!r} is ambiguous: it is supplied by {providers}",
                hint=f"use a qualified name: {options}",
            )
        known = sorted({e.name for e in entries} | {e.qualified_name for e in entries})
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        raise RegistryError(
            self._unknown_message(kind, name, entries, close), hint=self._hint(kind, name, close)
        )

    def _unknown_message(self, kind: str, name: str, entries: list[Entry], close: list[str]) -> str:
        lines = [f"unknown {kind} {name!r}"]
        if close:
            lines.append(f"  did you mean: {', '.join(close)}?")
        installed = sorted({e.name for e in entries})
        plural = KIND_TABLE[kind].plural
        lines.append(f"  installed {plural}: {', '.join(installed) if installed else '(none)'}")
        for plugin in self.failed_plugins():
            lines.append(f"  plugin {plugin.name!r} failed to load: {plugin.error}")
        return "\n".join(lines)

    def _hint(self, kind: str, name: str, close: list[str]) -> str:
        """Never invite installing a typo (a typosquatting invitation): a close installed
        name is the answer; a name whose plugin failed to load needs fixing, not installing."""
        if close:
            return f"use {close[0]!r} ('autorl list {kind}' shows the installed names)"
        base = name.rsplit("/", 1)[-1]
        package = shipped_distribution(kind, base)
        if package is None:  # not autorl's: only its author knows the distribution's name
            return (
                f"autorl ships no {kind} {base!r}: install the plugin that provides it (its "
                f"documentation names the distribution), then check with 'autorl list {kind}'"
            )
        status = next((p.status for p in self.plugins if p.name == package), None)
        if status == "failed":
            return f"{package} is installed but failed to load: see 'autorl plugins doctor'"
        if status in ("blocked", "skipped"):
            return f"{package} is installed but not loaded: AUTORL_PLUGINS/AUTORL_BLOCK_PLUGINS"
        if _installed(package):
            return f"{package} is installed but supplies no {kind} {base!r}: 'autorl plugins list'"
        return f"pip install {package} (it provides the {kind} {base!r}), then 'autorl list {kind}'"

    @staticmethod
    def _check_kind(kind: str) -> None:
        if kind not in KINDS:
            raise RegistryError(f"unknown kind {kind!r}", hint=f"kinds: {', '.join(KINDS)}")

    # instances --------------------------------------------------------------------------------

    def load_factory(self, kind: str, name: str) -> Any:
        entry = self.get(kind, name)
        try:
            return import_object(entry.spec.factory)
        except Exception as exc:
            install = f" ({entry.spec.install})" if entry.spec.install else ""
            raise PluginError(
                f"{kind} {entry.qualified_name!r}: cannot import {entry.spec.factory!r}: "
                f"{type(exc).__name__}: {exc}",
                hint=f"reinstall {entry.provider}{install}",
            ) from exc

    def create(self, kind: str, name: str, **kwargs: Any) -> Any:
        """Build a component and check it against its kind's protocol."""
        from autorl.protocols import PROTOCOLS

        entry = self.get(kind, name)
        factory = self.load_factory(kind, name)
        try:
            instance = factory(**kwargs)
        except TypeError as exc:
            raise PluginError(
                f"{kind} {entry.qualified_name!r}: {entry.spec.factory} rejected its options: {exc}"
            ) from exc
        protocol = PROTOCOLS.get(kind)
        if protocol is not None and not isinstance(instance, protocol):
            missing = [attr for attr in protocol_members(protocol) if not hasattr(instance, attr)]
            raise PluginError(
                f"{kind} {entry.qualified_name!r} built by {entry.spec.factory} does not follow "
                f"the {protocol.__name__} protocol (missing: {', '.join(sorted(missing)) or '?'})",
                hint="see docs/hooks.md for what each kind must provide",
            )
        return instance

    # observers --------------------------------------------------------------------------------

    def _notify(self, hook_name: str, event: Any) -> list[Problem]:
        problems = []
        for impl in getattr(self._pm.hook, hook_name).get_hookimpls():
            try:
                impl.function(*[event for _ in impl.argnames])
            except Exception as exc:
                problems.append(Problem(impl.plugin_name, f"{hook_name}: {exc!r}"))
        return problems

    def on_run_start(self, event: RunStartEvent) -> list[Problem]:
        return self._notify("autorl_on_run_start", event)

    def on_submission(self, event: SubmissionEvent) -> list[Problem]:
        return self._notify("autorl_on_submission", event)

    def on_run_end(self, event: RunEndEvent) -> list[Problem]:
        return self._notify("autorl_on_run_end", event)

    def contributions(self, event: RunEndEvent) -> tuple[list[RecordContribution], list[Problem]]:
        """Every plugin's contribution to the run's record (in hook order: ``tryfirst`` ones
        first); a plugin that raised, returned something else or reused another's name is a
        problem, never the run's end."""
        found: dict[str, RecordContribution] = {}
        problems = []
        hook = "autorl_contribute_to_record"
        for impl in reversed(getattr(self._pm.hook, hook).get_hookimpls()):
            try:
                result = impl.function(*[event for _ in impl.argnames])
            except Exception as exc:
                problems.append(Problem(impl.plugin_name, f"{hook}: {exc!r}"))
                continue
            if result is None:
                continue
            if not isinstance(result, RecordContribution) or not result.name.isidentifier():
                problems.append(Problem(
                    impl.plugin_name,
                    f"{hook} returned {type(result).__name__}, not a RecordContribution "
                    "whose name is an identifier",
                ))  # fmt: skip
            elif result.name in found:
                problems.append(Problem(
                    impl.plugin_name, f"{hook}: the name {result.name!r} is already taken"
                ))  # fmt: skip
            else:
                found[result.name] = result
        return list(found.values()), problems


_default: Registry | None = None
_default_lock = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry built from installed entry points (built once)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Registry.from_entry_points()
        return _default


def reset_registry(registry: Registry | None = None) -> None:
    """Replace (or drop) the process-wide registry; used by tests and the testing fixture."""
    global _default
    with _default_lock:
        _default = registry


__all__ = [
    "Entry",
    "Problem",
    "Registry",
    "get_registry",
    "import_object",
    "reset_registry",
]
