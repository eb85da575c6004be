"""autorl's `local` sandbox: development only, not a boundary."""
