"""The ``harness`` runtime and the ``allowlist`` egress proxy through the registry, as the
engine reaches them."""

from __future__ import annotations

from autorl_testing import EgressConformance, RuntimeConformance


class TestHarnessRuntime(RuntimeConformance):
    plugin_module = "autorl_sandbox_common.plugin"
    component = "harness"


class TestAllowlistEgress(EgressConformance):
    plugin_module = "autorl_sandbox_common.plugin"
    component = "allowlist"
