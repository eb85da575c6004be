"""The egress proxy: the agent's only way out when the run's egress policy is ``allowlist``.

An HTTP proxy (``CONNECT host:port`` for HTTPS, absolute-URI requests for plain HTTP) in the
harness process, served on a unix socket that namespace sandboxes forward to
``127.0.0.1:PORT`` inside (and on 127.0.0.1 for the ``local`` sandbox). A request to a host not
on the allowlist gets 403. Every request, allowed or not, is a line in ``egress.jsonl`` in the
run directory. TLS is not intercepted: the proxy sees host, port and byte counts, not content.

Hand-written (about a hundred lines of asyncio) rather than a proxy library: the whole policy
is one allowlist check and one log line, and it must listen on a unix socket of the harness.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from autorl_serving import HOST, unix_listener

MAX_HEADER = 64 * 1024
DEFAULT_PORTS = (80, 443)


def allowed(host: str, port: int, allow: Iterable[str]) -> bool:
    """``host`` (ports 80 and 443), ``host:port``, ``*.domain`` (any subdomain)."""
    host = host.lower().rstrip(".")
    for entry in allow:
        name, _, entry_port = entry.lower().rpartition(":") if ":" in entry else (entry, "", "")
        ports = (int(entry_port),) if entry_port else DEFAULT_PORTS
        if port not in ports:
            continue
        if name == host or (name.startswith("*.") and host.endswith(name[1:])):
            return True
    return False


def _split_target(target: str, default_port: int) -> tuple[str, int]:
    host, _, port = target.rpartition(":") if target.count(":") == 1 else (target, "", "")
    if not host:
        host, port = target, ""
    return host.strip("[]"), int(port) if port.isdigit() else default_port


class EgressProxy:
    def __init__(self, allow: Iterable[str], log_path: Path, unix_socket: Path | None) -> None:
        self.allow = tuple(allow)
        self.log_path = log_path
        self.unix_socket = unix_socket
        self._tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._tcp.bind((HOST, 0))
        self._tcp.listen(128)  # now: a client connecting before the loop serves waits, not refused
        self.port: int = self._tcp.getsockname()[1]
        self._unix = unix_listener(unix_socket) if unix_socket else None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="autorl-egress", daemon=True)
        self._lock = threading.Lock()
        self.requests = 0
        self.denied = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def env(self) -> dict[str, str]:
        """What the agent's environment needs to use the proxy."""
        env = {}
        for name in ("HTTP_PROXY", "HTTPS_PROXY"):
            env[name] = env[name.lower()] = self.url
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
        return env

    def start(self) -> EgressProxy:
        self._thread.start()
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        servers = [asyncio.start_server(self._handle, sock=self._tcp)]
        if self._unix is not None:
            servers.append(asyncio.start_unix_server(self._handle, sock=self._unix))
        self._servers = self._loop.run_until_complete(asyncio.gather(*servers))
        self._loop.run_forever()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        self._tcp.close()
        if self._unix is not None:
            self._unix.close()
            with contextlib.suppress(OSError):
                os.unlink(str(self.unix_socket))

    def _log(self, **fields: object) -> None:
        line = json.dumps({"time": time.time(), **fields})
        with self._lock, self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError, TimeoutError, OSError):
            writer.close()
            return
        if len(head) > MAX_HEADER:
            await self._reply(writer, 431, "request header too large")
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            await self._reply(writer, 400, "not an HTTP proxy request")
            return
        method, target, version = parts
        if method == "CONNECT":
            host, port = _split_target(target, 443)
            rest = b""
        elif target.startswith("http://"):
            authority, _, path = target[len("http://") :].partition("/")
            host, port = _split_target(authority, 80)
            kept = [
                h for h in lines[1:] if h and not h.lower().startswith(("proxy-", "connection"))
            ]
            rest = "\r\n".join([f"{method} /{path} {version}", *kept, "Connection: close", "", ""])
            rest = rest.encode("latin-1")
        else:
            await self._reply(writer, 400, "use the proxy for http:// URLs or CONNECT")
            return
        self.requests += 1
        ok = allowed(host, port, self.allow)
        self._log(method=method, host=host, port=port, allowed=ok)
        if not ok:
            self.denied += 1
            await self._reply(writer, 403, f"egress to {host}:{port} is not on the allowlist")
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), timeout=15
            )
        except (OSError, TimeoutError) as exc:
            await self._reply(writer, 502, f"cannot reach {host}:{port}: {type(exc).__name__}")
            return
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
        else:
            up_writer.write(rest)
        sent, received = await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer)
        )
        self._log(method=method, host=host, port=port, bytes_out=sent, bytes_in=received)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        total = 0
        try:
            while data := await reader.read(1 << 16):
                total += len(data)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(OSError):
                writer.close()
        return total

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, status: int, message: str) -> None:
        body = (message + "\n").encode()
        writer.write(
            f"HTTP/1.1 {status} {message[:60]}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(OSError):
            await writer.drain()
            writer.close()
