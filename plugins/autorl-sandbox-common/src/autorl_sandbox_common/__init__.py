"""What the sandboxes share (see the distribution's README)."""
