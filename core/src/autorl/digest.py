"""One way to fingerprint files and values for cache keys and records: ``"sha256:<64 hex>"``.

:func:`file_digest` covers files by name and content, :func:`json_digest` any JSON-able value
(canonical JSON: keys sorted, no spaces, UTF-8; other objects by ``str``), and :func:`short` cuts
either to a few hex digits for a file or directory name. Model weights are hashed by their
tensors instead (the grader's ``fingerprint``), so a re-saved checkpoint is not new.
:func:`installed_digest` fingerprints the installed libraries (the manifest's ``lock``).
Standard library only.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PREFIX = "sha256:"


def json_digest(value: Any) -> str:
    """SHA-256 of ``value``'s canonical JSON, so equal dicts give equal digests."""
    canonical = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return PREFIX + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def file_digest(paths: Iterable[str | Path], base: str | Path | None = None) -> str:
    """SHA-256 over the files' names and bytes, in the order given.

    A name is the path relative to ``base`` when given (so moving the tree changes nothing),
    else the file's own name. Each file is streamed (:func:`hashlib.file_digest`), then the list
    of ``[name, sha256 of bytes]`` pairs is digested, so no file's bytes can run into the next.
    """
    entries = []
    for path in map(Path, paths):
        name = path.relative_to(base).as_posix() if base is not None else path.name
        with path.open("rb") as fh:
            entries.append([name, hashlib.file_digest(fh, "sha256").hexdigest()])
    return json_digest(entries)


def short(digest: str, length: int = 16) -> str:
    """The first ``length`` hex digits of a digest, for a file or directory name."""
    return digest.removeprefix(PREFIX)[:length]


def installed_digest(pins: Iterable[tuple[str, str]] | None = None) -> dict[str, Any]:
    """The installed libraries as one digest: sorted ``name==version`` of every distribution
    (``pins``, else what :mod:`importlib.metadata` finds) but autorl's own, whose versions the
    manifest lists apart. It works for a clone installed from ``constraints.txt`` and for wheels
    alike; equal digests mean the same library versions (``make lock`` writes the lock's)."""
    if pins is None:
        pins = ((d.metadata["Name"] or "", d.version) for d in importlib.metadata.distributions())
    names = {(name.lower().replace("_", "-").replace(".", "-"), v) for name, v in pins if name}
    lines = sorted(f"{n}=={v}" for n, v in names if not n.startswith("autorl"))
    return {"sha256": json_digest(lines), "distributions": len(lines)}
