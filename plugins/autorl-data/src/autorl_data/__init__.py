"""Task data: splits built once into the cache, JSON-lines read with clear errors."""
