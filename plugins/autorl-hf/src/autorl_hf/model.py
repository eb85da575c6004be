"""The ``hf`` model: a local Hugging Face directory, or a hub id when online.

The engine gives it every ``--model`` that looks like a path or starts with ``hf:``
(``autorl_runner.setup.resolve_model``); huggingface_hub is imported only to download."""

from __future__ import annotations

from pathlib import Path

from autorl.errors import ConfigError
from autorl.types import ModelInfo


class HFDirectoryModel:
    """``--model /path/to/dir`` or ``--model hf:org/name`` (downloaded with huggingface_hub)."""

    name = "hf"

    def __init__(self, source: str) -> None:
        self.source = source
        if not source.startswith("hf:"):
            self._local_dir()  # fail before a run directory is created

    def _local_dir(self) -> Path:
        path = Path(self.source).expanduser().resolve()
        if not (path / "config.json").is_file():
            raise ConfigError(
                f"--model {self.source}: {path} is not a Hugging Face model directory "
                "(no config.json)",
                hint="pass a directory written by save_pretrained, or a name from "
                "'autorl list model'",
            )
        return path

    def materialize(self, cache_dir: Path) -> ModelInfo:
        if self.source.startswith("hf:"):
            repo = self.source[3:]
            try:
                from huggingface_hub import snapshot_download

                path = snapshot_download(repo, cache_dir=str(cache_dir / "hub"))
            except Exception as exc:
                raise ConfigError(
                    f"cannot download model {repo!r} from the hub: {type(exc).__name__}: {exc}",
                    hint="download it elsewhere and pass the local directory to --model",
                ) from None
            return ModelInfo(name=self.source, path=Path(path), description=f"hub: {repo}")
        path = self._local_dir()
        return ModelInfo(name=path.name, path=path, description=f"local directory {path}")
