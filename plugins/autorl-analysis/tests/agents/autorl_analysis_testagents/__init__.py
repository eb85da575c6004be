"""Test-only agents of autorl-analysis: each misbehaves in one way the analysis must catch."""
