"""What the outer layers share: the command line's helpers, the one progress reporter, the one
reader of subscription files, the one table of optional extras.

``commandline`` (``UsageError``, one line on stderr and exit code 2; ``require_extra`` with its
install hint; ``counted`` for counts in the singular or plural; the options every experiment
takes), ``extras`` (which extra provides which package), ``pair_files`` (subscription files as
TSV/CSV, one rule for ``match`` and ``route``, and the other-dialect warning), ``progress`` (the
progress line of long work). Used by ``cli``, ``bench``, ``spark``, ``compat`` and the latency
harness; standard library and topicmatch's public names only (tests/test_architecture.py), and
not part of the matching API (``topicmatch.__all__``).
"""
