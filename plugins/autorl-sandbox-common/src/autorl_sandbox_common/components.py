"""The ``harness`` runtime and the ``allowlist`` egress proxy, as the engine builds them through
the registry."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from autorl_sandbox_common.egress import EgressProxy
from autorl_sandbox_common.runtime import Runtime, build_runtime


class HarnessRuntime:
    name = "harness"

    def build(self, extra: Iterable[str] = ()) -> Runtime:
        return build_runtime(dict.fromkeys(extra))


class AllowlistEgress:
    name = "allowlist"

    def start(self, allow: Sequence[str], log_path: Path, unix_socket: Path) -> EgressProxy:
        return EgressProxy(allow, log_path, unix_socket).start()
