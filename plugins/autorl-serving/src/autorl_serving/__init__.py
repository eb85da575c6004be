"""The one hardened server behind the harness's loopback services (the grading API, the LLM
gateway) and the helpers that share its defences (the egress proxy's owner-only socket).

Everything that reaches these sockets may be the agent's, so the server defends the harness
process it lives in (issue 30, "the harness survives its own sockets"):

- the unix socket is mode 0600, its owner the harness's uid: only the sandbox's forwarder
  (its PID 1, the harness's uid or root) may connect, never the agent's own uid
  (:func:`unix_listener`);
- each listener admits at most :func:`connection_limit` open connections (the sandbox's
  connections all come through one listener, so this is the per-client cap); one more is
  answered ``503`` at once and closed, so a flood never takes the harness's file descriptors;
- a connection that sends nothing for ``first_byte_s`` seconds is closed (held-open floods);
- when ``accept`` fails for want of descriptors (EMFILE, ENFILE), one pending client is still
  answered ``503`` (through a reserved descriptor) and the listener pauses for a second: no
  busy loop, no traceback per attempt;
- :class:`BodyLimit` caps request bodies (413) and :class:`ContainErrors` turns an unexpected
  exception into one log line and a 500, never a traceback on the harness's terminal;
- repeated identical log records are rate-limited (:class:`RepeatFilter`);
- ``stop()`` returns within a bounded time whatever the open connections do.

Importing this package is cheap (standard library only); uvicorn is imported when a
:class:`ThreadedServer` starts.
"""

from autorl_serving.asgi import BodyLimit, ContainErrors, Reply, send_json
from autorl_serving.gate import HOST, RESOURCE_ERRNOS, connection_limit, unix_listener
from autorl_serving.logs import RepeatFilter, install_log_limits
from autorl_serving.server import Served, ThreadedServer

__all__ = [
    "HOST",
    "RESOURCE_ERRNOS",
    "BodyLimit",
    "ContainErrors",
    "RepeatFilter",
    "Reply",
    "Served",
    "ThreadedServer",
    "connection_limit",
    "install_log_limits",
    "send_json",
    "unix_listener",
]
