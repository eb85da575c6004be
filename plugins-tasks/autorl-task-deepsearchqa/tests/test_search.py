"""Search backends: the registry kind, bm25, brave over real HTTP, recording and replay."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_task_deepsearchqa.brave_server import BraveServer
from autorl_task_deepsearchqa.recording import SearchRecorder, SearchReplay, SearchReplayMiss
from autorl_task_deepsearchqa.search_backends import BraveSearchBackend, SearchError
from autorl_testing import registry_with
from autorl_testing.conformance import SearchBackendConformance

from autorl.errors import ConfigError, RegistryError
from autorl.protocols import SearchBackend
from autorl.registry import Registry

PLUGIN = "autorl_task_deepsearchqa.plugin"


class TestBm25Conformance(SearchBackendConformance):
    plugin_module = PLUGIN
    component = "bm25"
    query = "Republic of Calder province capital"


class TestBraveConformance(SearchBackendConformance):
    """The real API cannot be reached here: this project's server speaks it on 127.0.0.1."""

    plugin_module = PLUGIN
    component = "brave"
    query = "Vouriaxia"

    @pytest.fixture(autouse=True)
    def _server(self, monkeypatch: pytest.MonkeyPatch):
        with BraveServer(api_key="k") as server:
            monkeypatch.setenv("BRAVE_API_KEY", "k")
            monkeypatch.setenv("BRAVE_SEARCH_BASE_URL", server.url)
            yield


@pytest.fixture
def brave(monkeypatch: pytest.MonkeyPatch):
    with BraveServer(api_key="brave-test-key") as server:
        monkeypatch.setenv("BRAVE_API_KEY", "brave-test-key")
        monkeypatch.setenv("BRAVE_SEARCH_BASE_URL", server.url)
        yield server


def test_registry_finds_backends_by_name_and_explains_unknown_ones() -> None:
    registry = registry_with(PLUGIN)
    assert registry.names("search_backend") == ["bm25", "brave"]
    entry = registry.get("search_backend", "autorl-task-deepsearchqa/bm25")
    assert entry.spec.factory.endswith(":Bm25SearchBackend")
    backend = registry.create("search_backend", "bm25")
    assert isinstance(backend, SearchBackend) and backend.name == "bm25"
    with pytest.raises(RegistryError) as err:
        registry.get("search_backend", "bm52")
    assert "did you mean: bm25" in str(err.value) and "installed search_backends: bm25, brave" in (
        str(err.value)
    )
    assert "pip install" not in str(err.value)  # a typo is answered with the installed name
    assert "hint: use 'bm25'" in str(err.value)
    assert Registry.empty().names("search_backend") == []


def test_brave_backend_speaks_the_api_over_http(brave: BraveServer) -> None:
    backend = BraveSearchBackend()
    hits = backend.search("Vouriaxia province capital", 3)
    assert 1 <= len(hits) <= 3
    assert hits[0]["title"] == "Vouriaxia" and "<strong>" not in hits[0]["snippet"]
    assert hits[0]["url"].startswith("https://calder.example/wiki/")
    sent = brave.requests[-1]
    assert sent["path"] == "/res/v1/web/search"
    assert sent["params"] == {"q": "Vouriaxia province capital", "count": "3"}


def test_brave_backend_retries_rate_limits_then_fails_clearly(brave: BraveServer) -> None:
    backend = BraveSearchBackend(max_attempts=2)
    brave.fail_next(429)
    assert backend.search("Vouriaxia", 1)[0]["title"] == "Vouriaxia"
    brave.fail_next(503, 503)
    with pytest.raises(SearchError, match="HTTP 503"):
        backend.search("Vouriaxia", 1)


def test_brave_backend_bad_key_is_not_retried(brave: BraveServer, monkeypatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "wrong")
    before = len(brave.requests)
    with pytest.raises(SearchError, match="HTTP 401"):
        BraveSearchBackend(max_attempts=3).search("Vouriaxia", 1)
    assert len(brave.requests) == before + 1


def test_brave_backend_needs_the_key_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="needs BRAVE_API_KEY in the harness environment"):
        BraveSearchBackend()


def test_recording_then_replay_gives_the_same_results(brave: BraveServer, tmp_path: Path) -> None:
    tape = tmp_path / "searches.jsonl"
    recorder = SearchRecorder(BraveSearchBackend(), tape)
    live = [recorder.search(q, 3) for q in ("Vouriaxia", "Kelp", "Vouriaxia")]
    assert len(tape.read_text().splitlines()) == 2  # one line per distinct search
    brave.stop()
    replay = SearchReplay(tape, "brave")
    assert [replay.search(q, 3) for q in ("Vouriaxia", "Kelp", "Vouriaxia")] == live
    with pytest.raises(SearchReplayMiss, match="holds no brave search for 'Vouriaxia' \\(k=2\\)"):
        replay.search("Vouriaxia", 2)
    with pytest.raises(ConfigError, match="does not exist"):
        SearchReplay(tmp_path / "none.jsonl", "brave")
