"""The ``isolated`` sandbox, autorl's default boundary: bubblewrap namespaces, a separate uid
without capabilities, cgroup limits, and a PID-1 supervisor that forwards the grader and the
gateway over unix sockets (docs/security.md)."""
