"""``python -m entrypoints`` runs the memtrove command."""

import sys

from entrypoints.cli import main

sys.exit(main())
