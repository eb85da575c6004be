"""Executors: how a campaign's cells are run, and the built-in ``local`` one (one at a time).

A job is ``fn(item, placement)`` with ``fn`` a module-level (picklable) function: a pool runs
it on a thread, Ray on a worker of a cluster. ``placement`` says which GPUs the executor gave
the job (disjoint from those of every job running beside it); results come back as jobs finish
(:meth:`Executor.as_completed`), so a campaign records each cell the moment it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Slot:
    """What one job holds while it runs: CPU cores and whole GPUs."""

    cpus: float = 1.0
    gpus: int = 0


@dataclass(frozen=True)
class Placement:
    """Where a job runs: the GPU indices it owns (empty: none, or the executor does not
    assign devices), the CPU cores it holds (0: the executor does not share cores out), and a
    label of the worker (for the records)."""

    gpus: tuple[int, ...] = ()
    worker: str = "local"
    cpus: float = 0.0


@dataclass(frozen=True)
class Done:
    """One finished job: its index in ``items`` and its result, or the error that ended it."""

    index: int
    result: Any = None
    error: str | None = None


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def check_options(name: str, options: Mapping[str, Any] | None, known: Sequence[str]) -> None:
    """A ConfigError naming an executor option that ``name`` does not take."""
    from autorl.errors import ConfigError

    unknown = sorted(set(options or {}) - set(known))
    if unknown:
        raise ConfigError(
            f"executor {name!r}: unknown option(s) {', '.join(unknown)}",
            hint=f"options of {name!r}: {', '.join(known) or 'none'}",
        )


@dataclass(frozen=True)
class Jobs:
    """One :meth:`BaseExecutor.as_completed` call: one slot per item, options checked."""

    fn: Callable[[Any, Placement], Any]
    items: Sequence[Any]
    slots: list[Slot]
    options: dict[str, Any]


class BaseExecutor:
    """What every executor's ``as_completed`` does first (its options checked against
    :attr:`OPTIONS`, one :class:`Slot` per item, one CPU each by default); :meth:`run` is the
    executor's own scheduling."""

    name: ClassVar[str] = ""
    OPTIONS: ClassVar[tuple[str, ...]] = ()

    def as_completed(
        self,
        fn: Callable[[Any, Placement], Any],
        items: Sequence[Any],
        slots: Sequence[Slot] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Iterator[Done]:
        check_options(self.name, options, self.OPTIONS)
        filled = list(slots) if slots is not None else [Slot()] * len(items)
        if len(filled) != len(items):
            from autorl.errors import ConfigError

            raise ConfigError(
                f"executor {self.name!r}: {len(items)} item(s) but {len(filled)} slot(s)",
                hint="give one Slot per item, or none (one CPU each)",
            )
        yield from self.run(Jobs(fn, items, filled, dict(options or {})))

    def run(self, jobs: Jobs) -> Iterator[Done]:
        raise NotImplementedError


class SerialExecutor(BaseExecutor):
    """One job after another, in order, in this process."""

    name = "local"

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return [fn(item) for item in items]

    def run(self, jobs: Jobs) -> Iterator[Done]:
        for index, item in enumerate(jobs.items):
            try:
                yield Done(index, jobs.fn(item, Placement()))
            except Exception as exc:  # one failed job never stops the others
                yield Done(index, error=error_text(exc))
