"""Whether and where to log, read from the harness's environment (standard library only).

Opt-in through an autorl-specific variable, not MLflow's own ``MLFLOW_TRACKING_URI``: a team that
has that one set for other work must not find every autorl run logged just because this plugin
is installed. The run config cannot carry the switch (``RunConfig`` refuses unknown keys), and the
agent never sees these variables (its environment is built from scratch).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

TRACKING_URI = "AUTORL_MLFLOW_TRACKING_URI"
EXPERIMENT = "AUTORL_MLFLOW_EXPERIMENT"
ARTIFACT_LOCATION = "AUTORL_MLFLOW_ARTIFACT_LOCATION"
CAMPAIGN_ID = "AUTORL_CAMPAIGN_ID"
CAMPAIGN_CELL = "AUTORL_CAMPAIGN_CELL"  # set by autorl-campaign for each cell's `autorl run`
DEFAULT_EXPERIMENT = "autorl"


@dataclass(frozen=True)
class Settings:
    tracking_uri: str
    experiment: str = DEFAULT_EXPERIMENT
    artifact_location: str | None = None
    campaign_id: str | None = None
    campaign_cell: str | None = None

    def new_experiment_artifacts(self) -> str | None:
        """Where a new experiment keeps its artifacts.

        MLflow's default for a database store is ``./mlruns`` under whatever directory autorl
        was started from; beside the sqlite file is where a user looks for them.
        """
        if self.artifact_location:
            return self.artifact_location
        parsed = urlparse(self.tracking_uri)
        # sqlite:///relative.db and sqlite:////absolute.db (SQLAlchemy's forms): drop one '/'
        if parsed.scheme == "sqlite" and parsed.path not in ("", "/", "/:memory:"):
            db = Path(parsed.path[1:])
            return str(db.expanduser().resolve().parent / "mlartifacts")
        return None


def read_settings(environ: Mapping[str, str] | None = None) -> Settings | None:
    """None unless ``AUTORL_MLFLOW_TRACKING_URI`` is set to something."""
    env = os.environ if environ is None else environ
    uri = env.get(TRACKING_URI, "").strip()
    if not uri:
        return None
    return Settings(
        tracking_uri=uri,
        experiment=env.get(EXPERIMENT, "").strip() or DEFAULT_EXPERIMENT,
        artifact_location=env.get(ARTIFACT_LOCATION, "").strip() or None,
        campaign_id=env.get(CAMPAIGN_ID, "").strip() or None,
        campaign_cell=env.get(CAMPAIGN_CELL, "").strip() or None,
    )
