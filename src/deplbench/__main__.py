"""``python -m deplbench`` is the same as the ``deplbench`` command."""

import sys

from deplbench.cli import command

sys.exit(command())
