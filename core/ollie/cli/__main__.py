"""`python -m ollie.cli`: the same as the `ollie` console script."""

from __future__ import annotations

import sys

from ollie.cli import main

sys.exit(main())
