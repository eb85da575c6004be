"""autorl's default report: summary.json, report.md and score_over_time.png for one run."""

__version__ = "0.1.0"
