"""The ``llm`` gateway through the registry, as the engine reaches it."""

from __future__ import annotations

from autorl_testing import GatewayConformance


class TestLLMGateway(GatewayConformance):
    plugin_module = "autorl_llm.plugin"
    driver = "scripted/autorl-llm-conformance"

    def test_serves_a_driver_on_loopback(self, tmp_path, monkeypatch) -> None:
        script = tmp_path / "autorl-llm-conformance.yaml"
        script.write_text("replies_by: turn\nreplies:\n  - text: hello\n")
        monkeypatch.chdir(tmp_path)
        type(self).driver = f"scripted/{script.name}"
        super().test_serves_a_driver_on_loopback(tmp_path)
