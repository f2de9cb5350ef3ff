"""``python -m groupx_site`` is the ``groupx`` command (for a source checkout without the entry point)."""

import sys

from groupx_site.cli import main

sys.exit(main())
