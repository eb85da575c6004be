"""autorl's ``docker`` sandbox: the isolated sandbox's boundary, built from a container."""

__version__ = "0.1.0"
