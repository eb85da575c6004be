"""What autorl's interactive tasks share; the kit modules are standard library only.

A task's grader imports these modules from the installed package; its workspace kit gets a copy
of :data:`KIT_MODULES` (``kit/autorl_task_common/``), since the kit runs where no autorl package
is. ``kits`` (building a kit), ``interactive`` (the L3 tasks' ``prepare`` skeleton) and
``splits`` (a built split as the ``PreparedTask``) import autorl and are never copied.
"""

from __future__ import annotations

import shutil
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
KIT_MODULES = ("__init__.py", "bm25.py", "kitio.py", "react.py")


def kit_sources() -> list[Path]:
    """The files a kit copy holds (for the kit's cache key)."""
    return [PACKAGE_DIR / name for name in KIT_MODULES]


def copy_into_kit(kit_dir: Path) -> Path:
    """Copy this package to ``kit_dir/autorl_task_common/``; the kit puts ``kit_dir`` on
    ``sys.path``, so ``import autorl_task_common.react`` finds the copy there."""
    target = Path(kit_dir) / PACKAGE_DIR.name
    target.mkdir(parents=True, exist_ok=True)
    for source in kit_sources():
        shutil.copyfile(source, target / source.name)
    return target
