"""``python -m notebook_bcc`` runs the CLI."""

import sys

from notebook_bcc.cli import main

sys.exit(main())
