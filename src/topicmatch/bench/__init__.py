"""topicmatch's benchmarks: ``topicmatch bench <experiment>``.

Benchmark code lives here, apart from the tests; the tests only smoke-test it. The experiments
are modules with ``run(out, repeat, quick, progress) -> Path`` (declared in
:mod:`topicmatch.cli._bench`); the workloads of every benchmark, the demo and the latency harness
are in :mod:`topicmatch.bench.shapes`. Every result records the machine it ran on
(:func:`topicmatch.bench.machine.machine_info`).
"""
