"""Loading the parts of the ``alpaca-eval`` package we use, without its network paths.

We use AlpacaEval's own code for its judge prompt (template text, ``make_prompts``,
``prompt_to_chatml``, the seeded side randomisation) and its length-controlled win rate
(``alpaca_eval.metrics.glm_winrate``). Three things stand between that code and an offline run:

- ``import alpaca_eval`` runs the package's ``__init__``, which calls ``load_dotenv()`` and
  imports its CLI, every decoder and ``tiktoken`` (whose encodings download on first use). We
  never need those, so :func:`modules` registers a bare ``alpaca_eval`` package object and
  imports only the submodules we call (``utils``, ``constants``, ``metrics``). No decoder is
  imported, so no ``tiktoken`` encoding is ever requested.
- ``alpaca_eval.utils`` imports ``pkg_resources``, which recent setuptools no longer ships. When
  it is missing we register a two-function stand-in (``parse_version``, ``get_distribution``)
  built on ``packaging`` and ``importlib.metadata``, the functions ``utils`` calls.
- The GLM fetches two CSV files from the hub (``hf_hub_download``). :func:`local_hub_files`
  serves them from a local directory instead, for the duration of one call.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError

PACKAGE = "alpaca_eval"


def _pkg_resources_stand_in() -> bool:
    """Register a minimal ``pkg_resources`` when setuptools no longer provides one; True when
    it did (the caller removes it again once alpaca_eval holds its reference, so nothing else,
    e.g. pytest's ``syspath_prepend``, mistakes it for the real one)."""
    if "pkg_resources" in sys.modules or importlib.util.find_spec("pkg_resources") is not None:
        return False
    from importlib.metadata import version

    from packaging.version import parse

    module = types.ModuleType("pkg_resources")
    module.__doc__ = "autorl stand-in: only what alpaca_eval.utils calls."
    module.parse_version = parse  # type: ignore[attr-defined]
    module.get_distribution = lambda name: types.SimpleNamespace(version=version(name))  # type: ignore[attr-defined]
    sys.modules["pkg_resources"] = module
    return True


@functools.cache
def package_dir() -> Path:
    """Where alpaca_eval is installed (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "evaluator 'judge' needs the alpaca-eval package (judge prompts, LC win rate)",
            hint="pip install alpaca-eval==0.6.6 (a dependency of autorl-evaluator-judge)",
        )
    return Path(next(iter(spec.submodule_search_locations)))


def modules() -> types.SimpleNamespace:
    """``utils`` and ``glm_winrate`` of alpaca_eval, imported without the package ``__init__``."""
    if PACKAGE not in sys.modules:
        root = package_dir()
        bare = types.ModuleType(PACKAGE)
        bare.__path__ = [str(root)]  # type: ignore[attr-defined]
        bare.__file__ = str(root / "__init__.py")
        bare.__spec__ = importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
        bare.__spec__.submodule_search_locations = [str(root)]
        sys.modules[PACKAGE] = bare
    stand_in = _pkg_resources_stand_in()
    try:
        utils = importlib.import_module(f"{PACKAGE}.utils")
        glm = importlib.import_module(f"{PACKAGE}.metrics.glm_winrate")
    finally:
        if stand_in:
            sys.modules.pop("pkg_resources", None)
    return types.SimpleNamespace(utils=utils, glm=glm, root=package_dir())


@contextlib.contextmanager
def local_hub_files(files: Mapping[str, Path]) -> Iterator[None]:
    """Within the block, the GLM's ``hf_hub_download(filename=...)`` returns ``files[filename]``;
    a file not in ``files`` is a ConfigError (never a download)."""
    glm = modules().glm
    original = glm.hf_hub_download

    def serve(*_: Any, filename: str, **__: Any) -> str:
        if filename not in files:
            raise ConfigError(
                f"AlpacaEval's length-controlled GLM asked for {filename!r}, which is not "
                "available offline",
                hint="put instruction_difficulty.csv and df_gamed.csv (hub data set "
                "tatsu-lab/alpaca_eval) in the task's data_path",
            )
        return str(files[filename])

    glm.hf_hub_download = serve
    try:
        yield
    finally:
        glm.hf_hub_download = original
