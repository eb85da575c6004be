"""API keys and base URLs come from the harness's environment, never the agent's."""

from __future__ import annotations

import os
from collections.abc import Mapping

from autorl_llm.drivers.errors import DriverConfigError


def credentials(
    driver: str,
    *,
    key_vars: tuple[str, ...],
    url_var: str | None,
    default_url: str,
    env: Mapping[str, str] | None = None,
    base_url: str | None = None,
    required: bool = True,
) -> tuple[str | None, str]:
    """(api key, base URL): ``base_url`` option, else ``url_var``, else the public endpoint.

    ``env`` defaults to this (harness) process's environment; a missing key is an error naming
    every variable that would do.
    """
    env = os.environ if env is None else env
    key = next((env[v] for v in key_vars if env.get(v)), None)
    if key is None and required:
        names = " or ".join(key_vars)
        raise DriverConfigError(
            f"{driver}: {names} is not set in the harness environment",
            hint=f"export {key_vars[0]}=... before starting autorl (agents never see it; they "
            "talk to the harness's gateway)",
        )
    url = base_url or (env.get(url_var) if url_var else None) or default_url
    if not url.startswith(("http://", "https://")):
        source = "option base_url" if base_url else url_var
        raise DriverConfigError(f"{driver}: {source}={url!r} is not an http(s) URL")
    return key, url.rstrip("/")
