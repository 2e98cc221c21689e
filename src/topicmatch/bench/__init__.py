"""topicmatch's benchmarks: ``topicmatch bench <experiment>``.

Benchmark code lives here, apart from the tests; the tests only smoke-test it. Every result
records the machine it ran on (:func:`topicmatch.bench.machine.machine_info`).
"""
