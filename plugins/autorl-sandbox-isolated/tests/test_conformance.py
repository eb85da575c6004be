"""The isolated sandbox passes the conformance kit's boundary checks."""

from __future__ import annotations

from autorl_testing import SandboxConformance


class TestIsolatedSandbox(SandboxConformance):
    plugin_module = "autorl_sandbox_isolated.plugin"
