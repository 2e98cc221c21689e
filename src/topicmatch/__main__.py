"""``python -m topicmatch``: the same as the ``topicmatch`` command."""

import sys

from .cli import main

sys.exit(main())
