"""A safetensors file's header, read without torch or the safetensors package.

One reader for everyone who must look inside a weights file the agent wrote: the grader's
intake (before it copies anything), the checkpoint check, and the vLLM engine's frame (which
tensors, of which dtype and shape). The file is untrusted: a forged length, a header past the
end of the file or over ``max_bytes``, a header that is not one JSON object, or one key twice
(two readers could take different tensors from it) is a :class:`ValueError` naming it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

MAX_BYTES = 100 * 2**20
"""The default limit on a header (a real one is kilobytes; a forged length is refused)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            shown = key if len(key) <= 80 else key[:77] + "..."
            raise ValueError(f"duplicate key {shown!r}")
        out[key] = value
    return out


def read(path: Path, max_bytes: int = MAX_BYTES) -> tuple[int, dict[str, Any]]:
    """(offset of the data section, the parsed header) of the safetensors file ``path``."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        raw = fh.read(8)
        if len(raw) < 8:
            raise ValueError("shorter than the 8-byte header length")
        (length,) = struct.unpack("<Q", raw)
        if length > size - 8:
            raise ValueError(f"header length {length} beyond the end of the file")
        if length > max_bytes:
            raise ValueError(f"a header of {length} bytes, over the {max_bytes} read")
        header = json.loads(fh.read(length), object_pairs_hook=_unique_keys)
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    return 8 + length, header
