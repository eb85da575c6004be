"""The ``autorl`` command line; the helpers here serve plugins' commands too."""

from __future__ import annotations

import json
from typing import Any


def echoed_json_or_none(rows: Any, as_json: bool, empty: str) -> bool:
    """Print ``rows`` as JSON (``--json``) or, when there are none, the ``empty`` line; True
    when that was all a listing command had to print (else it prints its own table)."""
    import click

    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif not rows:
        click.echo(empty)
    return as_json or not rows
