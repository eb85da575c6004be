"""The gateway under hostile requests (issue 30), over real HTTP: oversized bodies get 413 in
each API's error format and never reach the call log, malformed requests (count_tokens
included) get 400 with a JSON error and no traceback on the harness's terminal, and its unix
socket admits only its owner."""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from autorl_llm.gateway import Gateway
from autorl_llm.gateway.app import MAX_BODY_BYTES

from .helpers import TOKEN, scripted

MARKER = "ECHO-MARKER"
AUTH = {"Authorization": f"Bearer {TOKEN}", "x-api-key": TOKEN}
PATHS = {
    "/v1/chat/completions": "openai",
    "/v1/responses": "openai",
    "/v1/messages": "anthropic",
    "/v1/messages/count_tokens": "anthropic",
    "/v1beta/models/m:generateContent": "gemini",
    "/v1beta/models/m:countTokens": "gemini",
}


def error_type(body: dict) -> str:
    error = body["error"]
    return error.get("type") or error.get("status")


def test_the_default_limit_is_8_mib() -> None:
    assert MAX_BODY_BYTES == 8 * 1024 * 1024


@pytest.mark.parametrize("path", list(PATHS))
def test_a_16_mb_body_gets_413_on_every_path_and_is_not_logged(
    gateway: Gateway, tmp_path: Path, path: str, capfd: pytest.CaptureFixture[str]
) -> None:
    text = MARKER + "a" * 16_000_000
    body = {"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": 5}
    started = time.monotonic()
    r = httpx.post(f"{gateway.url}{path}", json=body, headers=AUTH, timeout=60)
    assert r.status_code == 413, r.text
    assert time.monotonic() - started < 10
    assert MARKER not in r.text and "8388608 bytes" in r.text
    assert r.headers["x-should-retry"] == "false"
    kinds = {"openai": "invalid_request_error", "anthropic": "request_too_large"}
    assert error_type(r.json()) == kinds.get(PATHS[path], "INVALID_ARGUMENT")
    log = tmp_path / "driver_calls.jsonl"
    assert not log.exists() or log.stat().st_size == 0
    out, err = capfd.readouterr()
    assert MARKER not in out + err and "Traceback" not in out + err


def test_a_chunked_96_mb_body_is_cut_off(gateway: Gateway) -> None:
    def chunks():
        yield b'{"model": "m", "messages": [{"role": "user", "content": "'
        for _ in range(96 * 64):
            yield b"a" * 16_384

    r = httpx.post(f"{gateway.url}/v1/messages", content=chunks(), headers=AUTH, timeout=60)
    assert r.request.headers.get("transfer-encoding") == "chunked"
    assert r.status_code == 413


def test_a_request_under_the_limit_still_works(gateway: Gateway, tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "a" * 1_000_000}]}
    r = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=AUTH, timeout=60)
    assert r.status_code == 200
    assert len((tmp_path / "driver_calls.jsonl").read_text().splitlines()) == 1


STOP_FIELDS = {
    "/v1/chat/completions": lambda stops: {"stop": stops},
    "/v1/messages": lambda stops: {"stop_sequences": stops},
    "/v1beta/models/m:generateContent": lambda stops: {
        "generationConfig": {"stopSequences": stops}
    },
}


def _chat_body(path: str, stops: list[str]) -> dict:
    if path.startswith("/v1beta"):
        return {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            **STOP_FIELDS[path](stops),
        }
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5,
            **STOP_FIELDS[path](stops)}  # fmt: skip


@pytest.mark.parametrize("path", list(STOP_FIELDS))
def test_a_flood_of_stop_strings_is_refused_before_the_driver(
    gateway: Gateway, tmp_path: Path, path: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """Each generated token is checked against every stop string: 100,000 of them (4 MB, under
    the body limit) would stall the driver; each API's request is refused with 400 naming the
    bound, none of them quoted, nothing sent on; sixteen still work."""
    started = time.monotonic()
    flood = [f"{MARKER}{i:06d}{'s' * 24}" for i in range(100_000)]
    r = httpx.post(f"{gateway.url}{path}", json=_chat_body(path, flood), headers=AUTH, timeout=60)
    assert r.status_code == 400, r.text[:300]
    assert "100000 stop strings" in r.text and "at most 16" in r.text, r.text[:300]
    assert MARKER not in r.text and len(r.text) < 1000
    long = ["x" * 10_000]
    r = httpx.post(f"{gateway.url}{path}", json=_chat_body(path, long), headers=AUTH, timeout=60)
    assert r.status_code == 400 and "stop[0]: 10000 characters" in r.text, r.text[:300]
    assert time.monotonic() - started < 20
    log = tmp_path / "driver_calls.jsonl"
    assert not log.exists() or log.stat().st_size == 0
    fine = [f"END{i}" for i in range(16)]
    r = httpx.post(f"{gateway.url}{path}", json=_chat_body(path, fine), headers=AUTH, timeout=60)
    assert r.status_code == 200, r.text[:300]
    out, err = capfd.readouterr()
    assert MARKER not in out + err and "Traceback" not in out + err


def test_the_limit_is_configurable(tmp_path: Path) -> None:
    with Gateway(scripted(), token=TOKEN, log_path=tmp_path / "c.jsonl", max_body_bytes=100) as gw:
        body = {"model": "m", "messages": [{"role": "user", "content": "a" * 200}]}
        r = httpx.post(f"{gw.url}/v1/chat/completions", json=body, headers=AUTH)
        assert r.status_code == 413


GARBAGE = [
    b"not json",
    b"[1, 2, 3]",
    b'"a string"',
    b"\xff\xfe\x00",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"messages": "not a list"}',
    b'{"messages": [1, 2, {"role": 5}]}',
    b'{"system": {"a": 1}, "messages": null, "tools": 7}',
    b'{"model": 5, "messages": [{"role": "user", "content": [{"type": "image"}]}]}',
    b'{"contents": "x", "generationConfig": []}',
]


@pytest.mark.parametrize("path", list(PATHS))
def test_garbage_gets_400_with_a_json_error_and_no_traceback(
    gateway: Gateway,
    path: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    for body in GARBAGE:
        r = httpx.post(
            f"{gateway.url}{path}",
            content=body,
            headers={**AUTH, "content-type": "application/json"},
            timeout=30,
        )
        if r.status_code == 200:  # countTokens counts any JSON object
            assert path.endswith(("count_tokens", ":countTokens")) and body.startswith(b"{")
            continue
        assert r.status_code == 400, (path, body[:60], r.status_code, r.text)
        assert "error" in r.json()
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err + caplog.text


def test_count_tokens_garbage_is_400(gateway: Gateway) -> None:
    for body in (b"{not json", b"[]", b'{"messages": 5}'):
        r = httpx.post(
            f"{gateway.url}/v1/messages/count_tokens",
            content=body,
            headers={**AUTH, "content-type": "application/json"},
        )
        assert r.status_code == 400
        assert r.json()["error"]["type"] == "invalid_request_error"
    ok = httpx.post(
        f"{gateway.url}/v1/messages/count_tokens",
        json={"model": "m", "messages": [{"role": "user", "content": "hello there"}]},
        headers=AUTH,
    )
    assert ok.status_code == 200 and ok.json()["input_tokens"] > 0


def test_the_unix_socket_is_the_owners_only(tmp_path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="autorl-") as short:
        sock = Path(short) / "gateway.sock"
        with Gateway(scripted(), token=TOKEN, log_path=tmp_path / "c.jsonl", unix_socket=sock):
            info = sock.stat()
            assert info.st_mode & 0o777 == 0o600 and info.st_uid == os.getuid()
            with socket.socket(socket.AF_UNIX) as client:
                client.settimeout(5)
                client.connect(str(sock))
                client.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert client.recv(4096).startswith(b"HTTP/1.1 200 ")


def test_a_declared_huge_body_is_refused_before_it_is_sent(gateway: Gateway) -> None:
    where = urlparse(gateway.url)
    head = (
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"x-api-key: " + TOKEN.encode() + b"\r\nContent-Length: 100000000\r\n\r\n{"
    )
    with socket.create_connection((where.hostname, where.port), timeout=10) as sock:
        sock.sendall(head)
        answer = b""
        while b"}}" not in answer and (chunk := sock.recv(65536)):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "request_too_large"


def test_a_huge_call_is_logged_bounded_and_its_neighbours_survive(tmp_path: Path) -> None:
    """One 6 MB request (under the body limit) is one bounded log line: every call stays
    readable by the reports, none is pushed out (issue #30: calls 4-6 were lost)."""
    from autorl_llm.drivers.calllog import MAX_RECORD_BYTES, DriverCallLog

    log = DriverCallLog(tmp_path / "driver_calls.jsonl")
    for i in range(3):
        log.write({"ts": str(i), "driver": "scripted/x", "request": {"messages": ["hi"]}})
    log.write({"ts": "big", "driver": "scripted/x", "request": {"messages": ["x" * 6_000_000]}})
    for i in range(3, 6):
        log.write({"ts": str(i), "driver": "scripted/x", "request": {"messages": ["hi"]}})
    lines = (tmp_path / "driver_calls.jsonl").read_text().splitlines()
    assert all(len(line.encode()) <= MAX_RECORD_BYTES for line in lines)
    records = DriverCallLog.read(tmp_path / "driver_calls.jsonl")
    assert [r["ts"] for r in records] == ["0", "1", "2", "big", "3", "4", "5"]
    assert records[3]["truncated_from_bytes"] > 6_000_000
