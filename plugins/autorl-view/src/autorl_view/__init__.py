"""``autorl view``: runs and campaigns in the browser, read through the run record and the
campaign store, served on loopback behind a per-session token (see docs/viewer.md)."""
