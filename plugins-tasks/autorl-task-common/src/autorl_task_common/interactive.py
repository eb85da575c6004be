"""The ``prepare`` an interactive (L3) task shares: split, rollout config, contract, kit.

Each L3 task (alfworld, webshop, deepsearchqa) builds its shipped offline split unless
``data_path`` names the official data (the reference split), has the ``rollout`` evaluator play
it with the contract of the chosen prompt, and hands the agent a kit: ``autorl_kit.py``, a copy
of the environment modules, the TRAIN data only, and this package's kit modules. What differs
(how a split is read and written, the evaluator's numbers, what data the kit holds) stays in the
task; the order of the steps and the kit's layout live here once.

Grader side only: this module imports autorl and is not one of :data:`KIT_MODULES`, so it is
never copied into a kit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Protocol

from autorl_data.cache import build_once, params_digest

from autorl.types import PreparedTask, TaskContext
from autorl_task_common.splits import split_task


class InteractiveSettings(Protocol):
    """What the skeleton reads of a task's validated options."""

    @property
    def data_path(self) -> Path | None: ...

    @property
    def prompt(self) -> str: ...


class Describe(Protocol):
    def __call__(
        self,
        *,
        split: str,
        n_train: int,
        n_eval: int,
        evaluator_config: Mapping[str, Any],
        prompt: str,
    ) -> str: ...


def split_params(settings: Any, **source: Any) -> dict[str, Any]:
    """What a split is built from (``source``: its origin and the digest of its files) and
    the options that size it; :func:`build_split` names the split's directory by its digest,
    and the split's ``meta.json`` records it."""
    return {**source, "eval_size": settings.eval_size, "train_size": settings.train_size}


def build_split(
    cache: Path, split: str, params: Mapping[str, Any], build: Callable[[Path], None]
) -> Path:
    """Build the split ``split`` once, under ``cache/<split>-<digest of params>``."""
    return build_once(cache / f"{split}-{params_digest(params)}", build)


class InteractiveTask:
    """:meth:`prepare` of an L3 task; a subclass fills in the class attributes and the hooks.

    The offline split is built from the shipped data unless the options' ``data_path`` is set,
    then the reference split from the official data; both hold ``train.jsonl``, ``eval.jsonl``
    and ``meta.json``. The rollout evaluator plays the eval split with the contract of the
    options' ``prompt``.
    """

    offline_split: ClassVar[str]
    reference_split: ClassVar[str]
    contracts: ClassVar[Mapping[str, str]]
    """The contract module per prompt style."""
    metric: ClassVar[str]
    kit_requires: ClassVar[tuple[str, ...]]
    """Packages the kit needs in the agent's runtime."""
    describe: ClassVar[Describe]
    """The task's description, from the split, its sizes, the evaluator config and the prompt."""

    def parse_options(self, options: Mapping[str, Any]) -> InteractiveSettings:
        raise NotImplementedError

    def _offline(self, cache: Path, settings: Any) -> Path:
        raise NotImplementedError

    def _reference(self, cache: Path, settings: Any) -> Path:
        raise NotImplementedError

    def evaluator_config(self, settings: Any, split: str, split_dir: Path) -> dict[str, Any]:
        """The rollout evaluator's config for this run."""
        raise NotImplementedError

    def _kit(self, cache: Path, split_dir: Path, settings: Any, config: dict[str, Any]) -> Path:
        """The kit, through :func:`autorl_task_common.kits.build_kit` with the task's TRAIN data."""
        raise NotImplementedError

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        settings = self.parse_options(ctx.options)
        cache = Path(ctx.cache_dir)
        if settings.data_path is None:
            split_dir, split = self._offline(cache, settings), self.offline_split
        else:
            split_dir, split = self._reference(cache, settings), self.reference_split
        config = self.evaluator_config(settings, split, split_dir)
        return split_task(
            split_dir,
            split,
            type(self).describe,
            config,
            {"prompt": settings.prompt},
            evaluator="rollout",
            contract=self.contracts[settings.prompt],
            kit_dir=self._kit(cache, split_dir, settings, config),
            kit_requires=self.kit_requires,
            metric=self.metric,
        )


def inherit_protocol(base: ModuleType, namespace: dict[str, Any], *extra: str) -> None:
    """Make a protocol variant module (``namespace`` is its ``globals()``) everything ``base``
    exports (its ``__all__``), and export those names and ``extra`` (members only the variant
    has). Call it right after the imports: the variant's own definitions below it then replace
    what differs (its prompt, its action reading, its stops), so a variant states only that,
    not a copy of the base's member list."""
    namespace.update({name: getattr(base, name) for name in base.__all__})
    namespace["__all__"] = [*base.__all__, *extra]
