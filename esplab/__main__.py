"""``python -m esplab`` is the same as the ``esplab`` command."""

from __future__ import annotations

import sys

from esplab.cli import main

sys.exit(main())
