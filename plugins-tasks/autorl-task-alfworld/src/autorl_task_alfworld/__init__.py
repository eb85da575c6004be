"""autorl task: ALFWorld household text games in the real ALFWorld engine (level 3)."""
