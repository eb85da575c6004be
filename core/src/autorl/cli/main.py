"""Placeholder; replaced by the CLI implementation."""


def main() -> None:
    raise SystemExit("autorl CLI: not yet available")
