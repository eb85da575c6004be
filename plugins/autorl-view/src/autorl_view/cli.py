"""``autorl view [DIRECTORY]``: serve the viewer on loopback until Ctrl-C."""

from __future__ import annotations

import socket
from pathlib import Path

import click

from autorl.errors import AutorlError

HOST = "127.0.0.1"


@click.command()
@click.argument(
    "directory",
    required=False,
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("runs"),
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, help="Port (default: a free one)."
)
def view(directory: Path, port: int) -> None:
    """Browse runs and campaigns in the browser: a runs directory (default ./runs), one run's
    directory or a campaign's. Served on 127.0.0.1 only; the printed URL holds a token that
    every request needs. Ctrl-C stops it."""
    import uvicorn

    from autorl_view.app import create_app, new_token

    if not directory.is_dir():
        raise AutorlError(
            f"{directory} is not a directory",
            hint="pass a runs directory (default ./runs), one run's or a campaign's directory",
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise AutorlError(
            f"cannot listen on {HOST}:{port}: {exc.strerror or exc}",
            hint="pick another --port, or leave it out for a free one",
        ) from exc
    bound = sock.getsockname()[1]
    token = new_token()
    app = create_app(directory, token, port=bound)
    click.echo(f"autorl view: {directory.resolve()}")
    click.echo(f"open http://{HOST}:{bound}/?token={token}")
    click.echo("(only this URL opens it: keep it to yourself; Ctrl-C stops the server)", err=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shut down first, then re-raised the signal
        pass
    finally:
        sock.close()
    click.echo("autorl view stopped", err=True)
