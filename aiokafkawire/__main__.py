"""``python -m aiokafkawire``: the ``aiokafkawire`` command (see :mod:`aiokafkawire.cli`)."""

import sys

from aiokafkawire.cli import main

sys.exit(main())
