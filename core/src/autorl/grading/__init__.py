"""The grading API the agent talks to (FastAPI on 127.0.0.1 with a per-run bearer token)."""
