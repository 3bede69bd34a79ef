"""``python -m jaxbench.cli``: the ``jaxbench`` command."""

from jaxbench.cli import main

main()
