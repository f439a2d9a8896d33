# SPDX-License-Identifier: BSD-2-Clause
"""``python -m scaleup_ip.export --help``."""

import sys

from .cli import main

sys.exit(main())
