"""The ``local`` sandbox passes the sandbox conformance checks and is not a boundary."""

from __future__ import annotations

from autorl_testing import SandboxConformance


class TestLocalSandbox(SandboxConformance):
    plugin_module = "autorl_sandbox_local.plugin"
    component = "local"
    isolated = False
