"""The results store: one line per finished run in ``<runs_dir>/results.jsonl``, the run's
summary as its record gives it (the same object ``summary.json`` renders), whichever reports
the run rendered."""

from __future__ import annotations

import json
from pathlib import Path

from autorl.errors import AutorlError
from autorl_records.records import load_run, summary


def append_result(run_dir: Path) -> bool:
    """Append the run's summary; False (nothing written) for a run without a manifest."""
    try:
        record = load_run(run_dir)
    except AutorlError:
        return False
    line = json.dumps(summary(record), default=str) + "\n"
    with (Path(run_dir).parent / "results.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(line)
    return True
