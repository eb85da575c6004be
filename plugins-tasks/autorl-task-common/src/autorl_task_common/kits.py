"""Building a task's workspace kit into the task cache (grader side: imports autorl).

Two layouts: :func:`module_kit`, a kit that is one module of the task's package (its grader
protocol, standard library only) with ``config.json`` when a run configures it; and
:func:`build_kit`, an L3 kit (the environment modules as a package, the TRAIN data). Both ship
this package's kit modules (:data:`autorl_task_common.KIT_MODULES`), which the kit imports, and
are built once under a name that digests every copied source.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl_data.cache import build_once

from autorl.digest import file_digest, json_digest, short
from autorl_task_common import copy_into_kit, kit_sources

KIT_NAME = "autorl_kit.py"
"""The kit module the agent imports."""


def module_kit(cache: Path, source: Path, config: dict[str, Any] | None = None) -> Path:
    """``autorl_kit.py`` (a verbatim copy of ``source``), ``autorl_task_common/`` (what it
    imports) and, with ``config``, ``config.json`` beside it (the run's protocol, which the
    module reads: its functions are then the grader's)."""
    text = None if config is None else json.dumps(config, indent=1, ensure_ascii=False)
    key = json_digest([file_digest([source, *kit_sources()]), config])

    def build(staging: Path) -> None:
        if text is not None:
            (staging / "config.json").write_text(text, encoding="utf-8")
        copy_into_kit(staging)
        shutil.copyfile(source, staging / KIT_NAME)

    return build_once(cache / f"kit-{short(key, 12)}", build, marker=KIT_NAME)


@dataclass(frozen=True)
class KitLayout:
    """Where an L3 kit's environment comes from: ``modules`` of ``package_dir`` (and its
    ``kit.py``), copied into the kit's package ``package``; ``title`` names the environment."""

    package_dir: Path
    package: str
    modules: tuple[str, ...]
    title: str


def build_kit(
    cache: Path, layout: KitLayout, key: Sequence[Any], fill: Callable[[Path], None]
) -> Path:
    """Build an L3 kit once under ``cache/kit-<digest>`` and return it.

    The kit holds ``autorl_kit.py`` (the task's ``kit.py``), ``layout.package/`` (verbatim
    copies of the environment modules), ``autorl_task_common/`` (what those modules import) and
    whatever ``fill(staging)`` writes: the TRAIN data and the grader's settings, never held-out
    data. The digest covers every copied source and ``key`` (the split and settings the data
    depends on), so a changed module or option builds a new kit.
    """
    here = layout.package_dir
    sources = [*(here / name for name in (*layout.modules, "kit.py")), *kit_sources()]
    target = cache / f"kit-{short(json_digest([file_digest(sources), *key]), 12)}"

    def build(staging: Path) -> None:
        env = staging / layout.package
        env.mkdir()
        (env / "__init__.py").write_text(
            f'"""The {layout.title} environment (a copy of the grader\'s modules)."""\n',
            encoding="utf-8",
        )
        for name in layout.modules:
            shutil.copyfile(here / name, env / name)
        fill(staging)
        copy_into_kit(staging)  # the shared modules the env modules import
        shutil.copyfile(here / "kit.py", staging / KIT_NAME)

    return build_once(target, build, marker=KIT_NAME)
