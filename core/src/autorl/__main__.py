"""``python -m autorl`` is the ``autorl`` command."""

from autorl.cli.main import main

main()
