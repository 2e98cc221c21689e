"""Where the DFA batch walk spends its time in each build, and the best ratio compiling can give.

    .venv/bin/python benchmarks/dfa_profile.py [SECONDS]

Needs Linux ``perf`` (Debian's ``linux-perf``) and permission to use it (root, or a low
``kernel.perf_event_paranoid``). For each build (compiled, then pure with ``TOPICMATCH_PURE=1``)
and each walk, a child process walks the topics of the workload matrix's *distinct-10k* row as
``benchmarks/compiled.py``'s ``dfa`` experiment does (``Matcher.batch_walk()``: 2,000 topics a
batch, level by level with ``advance``, then ``subscribers``) for SECONDS (default 8) under
``perf record --call-graph dwarf``:

* *cold*: a write drops the DFA before each batch, which therefore learns every state it reaches;
* *learnt*: three batches learnt before the profile starts, then walked again in turn.

The cyclic garbage collector is paused during the walks, as the Spark workers walk; the cold
walk's garbage is collected between batches, outside the timing, and the samples under that
``gc.collect()`` are left out.

Each sample is charged to the code's own work when its innermost frame is code of the package's
(compiled: a function mypyc made, or mypyc's runtime helpers beside them, such as its wrapper
of ``dict.get``, whose first read of the dict often waits for memory; pure: CPython's interpreter
loop), else to the C operation that code called, named by the first CPython function below it
that says what it is (``dict`` lookup, ``frozenset(...)``, iteration, ...), or to the calls'
lookup and dispatch when none does.
Printed per build and walk: µs per topic (the child's own clock, not perf's), and its split.
Then the bound: pure's time ÷ (compiled's time - compiled's own work and its calls' lookup and
dispatch), the ratio the compiled build would reach if its own code cost nothing and only the C
operations it calls remained. The C operations are the same calls in both builds (the same
dicts, sets and tuples built and read), so that remainder is what no compiler of this source
can remove.

Figures: docs/compiled.md (where the DFA batch walk's time goes).
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

#: The C operations, by a function of CPython that performs them (the first match below the
#: code's own frame names the operation).
OPERATIONS = [
    (r"^(_PySys_GetSizeOf|sys_getsizeof)$", "sys.getsizeof"),
    (r"^(set_sizeof|unicode_sizeof|tuple_sizeof)$", "__sizeof__"),
    (
        r"^(make_new_set|frozenset_new|frozenset_vectorcall|PyFrozenSet_New|set_union|set_copy)$",
        "frozenset(...)",
    ),
    (r"^(_PyDict_FromKeys|dict_fromkeys)$", "dict.fromkeys"),
    (r"^(PyDict_SetDefault|dict_setdefault)$", "dict.setdefault"),
    (
        r"^(PySequence_Tuple|tuple_new_impl|tuple_vectorcall|_PyTuple_FromArray|PyTuple_New|PyList_AsTuple)$",
        "tuple(...)",
    ),
    (r"^(PyList_Append|list_append|_PyList_AppendTakeRef.*)$", "list.append"),
    (r"^(PyDict_SetItem|insertdict|insert_to_emptydict)$", "dict store"),
    (
        r"^(PyDict_GetItemWithError|dict_get|dict_get_impl|_Py_dict_lookup|PyDict_GetItem|dict_subscript)$",
        "dict lookup",
    ),
    (r"^(set_update_internal|set_add_entry|PySet_Add|set_add|set_merge)$", "set insertions"),
    (r"^(PyDict_New|new_dict|_PyDict_NewPresized)$", "new dict"),
    (
        r"^(PyObject_GetIter|PyIter_Next|listiter_next|tupleiter_next|setiter_iternext|dictiter_iternextkey|zip_next|map_next)$",
        "iteration",
    ),
    (r"dealloc|_Py_Dealloc|PyObject_GC_Del", "deallocation"),
    (r"Malloc|pymalloc|GC_New|GenericAlloc|_PyObject_GC_Link", "allocation"),
    (r"^(exc_page_fault|asm_exc_page_fault)$", "page faults"),
]
OWN = "(own code)"
#: Samples in CPython's generic call machinery with no operation found below it: the lookup and
#: dispatch of a method (``frozenset.union``, ``__sizeof__``) or a call, which compiled code pays
#: for methods mypyc has no primitive for. The bound counts them with the code's own work.
CALLS = "(calls: lookup and dispatch)"
CALL_MACHINERY = {
    "PyObject_VectorcallMethod",
    "_PyObject_GetMethod",
    "PyObject_Vectorcall",
    "_PyObject_MakeTpCall",
    "_PyObject_Call",
    "PyObject_GetAttr",
    "_Py_CheckFunctionResult",
}
BATCH = 2_000


# -- the child: one build, one walk ---------------------------------------------------------------
def child(walk: str, seconds: float) -> None:
    import topicmatch  # noqa: PLC0415 - imported here so that the parent needs no build of its own
    from topicmatch import Matcher  # noqa: PLC0415
    from topicmatch.bench import shapes  # noqa: PLC0415

    shape = shapes.distinct(10_000, BATCH * 40)
    m = Matcher(dialect="mqtt", cache_size=0)
    m.subscribe_many(shape.pairs)
    batches = [
        [[t.split("/")[level] for t in shape.topics[BATCH * r : BATCH * (r + 1)]] for level in range(5)]
        for r in range(40)
    ]

    def batch(levels: list[list[str]]) -> int:
        walk = m.batch_walk()
        assert walk is not None
        states = [walk.root] * len(levels[0])
        for words in levels:
            states = walk.advance(states, words)
        return len(list(map(walk.subscribers, states)))

    def drop() -> None:
        m.subscribe("drop/the/dfa", "x")
        m.unsubscribe("drop/the/dfa", "x")

    if walk == "learnt":
        drop()
        batches = batches[:3]
        for levels in batches:
            batch(levels)
    gc.collect()
    gc.disable()
    print("ready", flush=True)  # the parent starts perf's recording now
    end = time.perf_counter() + seconds
    spent, topics, r = 0.0, 0, 0
    while time.perf_counter() < end:
        levels = batches[r % len(batches)]
        r += 1
        if walk == "cold":
            drop()
            gc.collect()
        start = time.perf_counter()
        topics += batch(levels)
        spent += time.perf_counter() - start
    print(f"{topicmatch.BUILD} {spent / topics * 1e6:.4f}", flush=True)


# -- the parent: perf, and the samples' attribution ---------------------------------------------
def _frames(block: str) -> list[tuple[str, str, list[str]]]:
    """A sample's stack from ``perf script``, innermost first: (function, its file, the functions
    inlined into it at that address)."""
    out: list[tuple[str, str, list[str]]] = []
    inlined: list[str] = []
    for line in block.strip().splitlines():
        found = re.match(r"\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)$", line)
        if not found:
            continue
        name = re.sub(r"\+0x[0-9a-f]+$", "", found.group(1))
        where = found.group(2).rsplit("/", 1)[-1]
        if where == "inlined":
            inlined.append(name)
            continue
        out.append((name, where, inlined))
        inlined = []
    return out


def _own(frame: tuple[str, str, list[str]], pure: bool) -> bool:
    name, where, _ = frame
    if pure:
        return name == "_PyEval_EvalFrameDefault"
    return where.startswith("topicmatch__mypyc")


def attribute(script: str, pure: bool) -> Counter[str]:
    """Samples per operation (and :data:`OWN`) of one profile's ``perf script`` text."""
    counts: Counter[str] = Counter()
    for block in script.split("\n\n"):
        frames = _frames(block)
        names = {f[0] for f in frames} | {n for f in frames for n in f[2]}
        if not frames or names & {"gc_collect_main", "delete_garbage", "visit_decref", "visit_reachable"}:
            continue  # the collector runs only in the gc.collect() between batches: not the walk
        own = next((i for i, f in enumerate(frames) if _own(f, pure)), None)
        if own is None:
            continue
        if own == 0:
            counts[OWN] += 1
            continue
        operation = None
        for name, _, inlined in reversed(frames[:own]):  # from the callee of own code inwards
            for candidate in (name, *reversed(inlined)):
                operation = next((op for pattern, op in OPERATIONS if re.search(pattern, candidate)), None)
                if operation:
                    break
            if operation:
                break
        if operation is None:
            callee = frames[own - 1][0]
            operation = CALLS if callee in CALL_MACHINERY else "other C: " + callee
        counts[operation] += 1
    return counts


def profile(walk: str, pure: bool, seconds: float, scratch: Path) -> tuple[float, Counter[str]]:
    env = {**os.environ, "TOPICMATCH_PURE": "1" if pure else ""}
    data = scratch / f"{walk}-{'pure' if pure else 'compiled'}.data"
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", walk, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    perf = subprocess.Popen(
        [
            "perf",
            "record",
            "-q",
            "-F",
            "1000",
            "--call-graph",
            "dwarf,16384",
            "-p",
            str(proc.pid),
            "-o",
            str(data),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    build, per_topic = proc.stdout.readline().split()
    proc.wait(timeout=60)
    perf.wait(timeout=120)
    assert build == ("pure" if pure else "compiled"), build
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "ip,sym,dso"], capture_output=True, text=True, check=True
    ).stdout
    return float(per_topic), attribute(script, pure)


def main(seconds: float) -> None:
    if shutil.which("perf") is None:
        sys.exit("perf is not installed (Debian: apt-get install linux-perf)")
    load = os.getloadavg()[0]
    print(f"# the DFA batch walk profiled, {seconds:g} s per build and walk; load average {load:.2f}")
    scratch = Path(tempfile.mkdtemp(prefix="dfa-profile-"))
    try:
        for walk in ("cold", "learnt"):
            times = {}
            for pure in (False, True):
                build = "pure" if pure else "compiled"
                per_topic, counts = profile(walk, pure, seconds, scratch)
                total = sum(counts.values())
                times[build] = (per_topic, per_topic * (counts[OWN] + counts[CALLS]) / total)
                print(f"{walk}, {build}: {per_topic:.3f} µs per topic ({total} samples)")
                for name, n in counts.most_common(12):
                    print(f"  {per_topic * n / total:7.3f} µs  {100 * n / total:5.1f} %  {name}")
            compiled, own = times["compiled"]
            pure_time = times["pure"][0]
            print(
                f"{walk}: pure ÷ compiled {pure_time / compiled:.2f}x; compiled's C operations (all but "
                f"its own code and calls) "
                f"{compiled - own:.3f} µs per topic, so at best pure ÷ compiled = "
                f"{pure_time / (compiled - own):.2f}x"
            )
    finally:
        shutil.rmtree(scratch)
    print(f"# load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], float(sys.argv[3]))
    else:
        main(float(sys.argv[1]) if len(sys.argv) > 1 else 8.0)
