"""The file to give ``spark-submit``: it runs the ``topicmatch`` command line.

spark-submit starts Python applications from a ``.py`` file run as a script, so this one uses
absolute imports (``python -m topicmatch`` cannot be submitted). Its path::

    python -c 'import topicmatch.cli.submit as s; print(s.__file__)'

and then, for example::

    spark-submit --master spark://host:7077 .../topicmatch/cli/submit.py route --messages ...

Under spark-submit, ``topicmatch route`` takes the master and every other setting from
spark-submit (do not pass ``--master`` again).
"""

from __future__ import annotations

import sys

from topicmatch.cli import main

if __name__ == "__main__":
    sys.exit(main())
