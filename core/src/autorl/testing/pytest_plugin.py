"""pytest plugin of autorl.testing (fixtures for plugin authors)."""
