"""Post-hoc run analysis: routes, failures, timeline, integrity flags (see docs/analysis.md)."""
