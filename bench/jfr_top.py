#!/usr/bin/env python3
"""Summarises a Java Flight Recorder file written by ``bench/run.py --jfr FILE``.

Counts CPU samples (jdk.ExecutionSample) and native-method samples (jdk.NativeMethodSample,
e.g. RocksDB JNI calls) of Spark's task threads, and prints:
  * the top "self" frames (the method on top of the stack),
  * inclusive counts for the methods/classes of interest (kstate, RocksDB, shuffle, parquet ...),
  * a coarse split of task time by component.

    PYTHONPATH=python .venv/bin/python bench/run.py --variants kstate --reps 1 --no-count \\
        --no-save --jfr bench/results/tmp/kstate.jfr --keep-tmp
    .venv/bin/python bench/jfr_top.py bench/results/tmp/kstate.jfr
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from typing import Iterator, List, Tuple

# (label, regex on a frame) -- the first matching frame from the TOP of the stack decides the
# component of a sample in the coarse split.
COMPONENTS = [
    ("RocksDB native/JNI (get/put/iterator/write batch)", r"^org\.rocksdb\."),
    (
        "Spark RocksDB state store (JVM side)",
        r"execution\.streaming\.state\.(RocksDB|StateStoreChangelog|RocksDBFileManager)",
    ),
    ("Spark HDFS state store", r"HDFSBackedStateStore"),
    ("kstate TaskOrder (buffer + order rows)", r"kstate\.execution\.TaskOrder"),
    ("kstate ExpiryIndex", r"kstate\.operatorstate\.ExpiryIndex"),
    ("kstate StoreDedupState / StateMeta", r"kstate\.operatorstate\.(StoreDedupState|StateMeta)"),
    ("kstate other", r"(io\.kstate\.|sql\.kstate\.)"),
    ("state encoders (UnsafeRow <-> bytes)", r"(StateEncoder|RocksDBStateEncoder|StateStoreRowChecker)"),
    (
        "shuffle read/write, serialization",
        r"org\.apache\.spark\.(shuffle|storage|serializer|io)\.|UnsafeRowSerializer|ShuffleExchange",
    ),
    ("parquet read", r"(parquet|Parquet|VectorizedColumnReader)"),
    ("codegen'd Spark operators", r"GeneratedClass|GeneratedIterator"),
    ("compression (lz4/zstd/snappy)", r"(lz4|zstd|snappy|Lz4|Zstd)"),
    ("file system / checkpoint IO", r"(org\.apache\.hadoop\.|java\.io\.|sun\.nio\.|java\.nio\.)"),
]

INTEREST = [
    r"kstate\.processor\.dedup\.DedupProcessor\.process",
    r"kstate\.processor\.dedup\.DedupProcessor\.finish",
    r"kstate\.execution\.TaskOrder\$\.apply",
    r"kstate\.execution\.KStateStatefulExec.*run",
    r"kstate\.execution\.KStateDeduplicateExec\$DedupTask\.process",
    r"kstate\.operatorstate\.StoreDedupState\.get",
    r"kstate\.operatorstate\.StoreDedupState\.put",
    r"kstate\.operatorstate\.StoreDedupState\.purgeOlderThan",
    r"kstate\.operatorstate\.ExpiryIndex\.add",
    r"kstate\.operatorstate\.ExpiryIndex\.drainBefore",
    r"kstate\.operatorstate\.StateMeta",
    r"kstate\.execution\.InputPositionExec",
    r"RocksDBStateStore\.get\b|RocksDBStateStore\.get\(",
    r"RocksDBStateStore\.put",
    r"RocksDBStateStore\.remove",
    r"RocksDBStateStore\.iterator",
    r"RocksDBStateStore\.commit",
    r"RocksDB\.commit",
    r"RocksDB\.load",
    r"RocksDBFileManager\.saveCheckpointToDfs",
    r"org\.rocksdb\.RocksDB\.get",
    r"org\.rocksdb\.RocksDB\.put",
    r"org\.rocksdb\.RocksDB\.delete",
    r"org\.rocksdb\.RocksDB\.write",
    r"org\.rocksdb\.RocksDB\.flush",
    r"org\.rocksdb\.Checkpoint",
    r"org\.rocksdb\.RocksIterator",
    r"org\.rocksdb\.WriteBatch",
    r"StreamingDeduplicateWithinWatermarkExec",
    r"HDFSBackedStateStore",
    r"ShuffleExchangeExec|SortShuffleWriter|BypassMergeSortShuffleWriter|UnsafeShuffleWriter",
    r"ShuffleBlockFetcherIterator|BlockStoreShuffleReader",
    r"VectorizedParquetRecordReader|ParquetFileFormat|ParquetPartitionReader",
    r"UnsafeRow\.copy",
]


def events(path: str, stack_depth: int) -> Iterator[Tuple[str, str, List[str]]]:
    """(event type, thread name, frames top first) for every sample in the recording."""
    jfr = shutil.which("jfr") or os.path.join(os.environ.get("JAVA_HOME", "/usr"), "bin", "jfr")
    cmd = [
        jfr,
        "print",
        "--stack-depth",
        str(stack_depth),
        "--events",
        "jdk.ExecutionSample,jdk.NativeMethodSample",
        path,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1 << 20)
    kind, thread, frames, in_stack = None, "", [], False
    assert proc.stdout is not None
    for line in proc.stdout:
        s = line.strip()
        if s.startswith("jdk.ExecutionSample") or s.startswith("jdk.NativeMethodSample"):
            kind, thread, frames, in_stack = s.split()[0], "", [], False
        elif s.startswith("sampledThread ="):
            m = re.search(r'"(.*)"', s)
            thread = m.group(1) if m else s
        elif s.startswith("stackTrace = ["):
            in_stack = True
        elif in_stack and s == "]":
            in_stack = False
        elif in_stack and s and s != "...":
            frames.append(re.sub(r"\s+line:.*$", "", s))
        elif s == "}" and kind:
            yield kind, thread, frames
            kind = None
    proc.wait()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("jfr_file")
    p.add_argument(
        "--threads", default="Executor task launch worker", help="only samples of threads whose name contains this"
    )
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--stack-depth", type=int, default=96)
    p.add_argument(
        "--callers",
        default=None,
        metavar="REGEX",
        help="instead: the most common call paths (6 frames) into frames matching REGEX",
    )
    a = p.parse_args()
    if a.callers:
        paths = Counter()
        n = 0
        for _kind, thread, frames in events(a.jfr_file, a.stack_depth):
            if a.threads not in thread:
                continue
            for i, f in enumerate(frames):
                if re.search(a.callers, f):
                    n += 1
                    paths["\n      <- ".join(frames[i : i + 6])] += 1
                    break
        print(f"{n} samples with a frame matching {a.callers!r}")
        for path, v in paths.most_common(a.top):
            print(f"  {v:5d}  {path}")
        return 0

    total = Counter()
    self_ = Counter()
    incl = Counter()
    comp = Counter()
    for kind, thread, frames in events(a.jfr_file, a.stack_depth):
        if a.threads not in thread or not frames:
            continue
        if kind == "jdk.NativeMethodSample" and frames[0].startswith(("sun.nio.ch.", "java.lang.Object.wait")):
            continue  # idle, not work
        total[kind] += 1
        self_[frames[0]] += 1
        text = "\n".join(frames)
        for pat in INTEREST:
            if re.search(pat, text):
                incl[pat] += 1
        for label, pat in COMPONENTS:
            if any(re.search(pat, f) for f in frames[:12]):
                comp[label] += 1
                break
        else:
            comp["other (JDK, Scala collections, Spark core)"] += 1
    n = sum(total.values())
    if not n:
        print("no samples of matching threads")
        return 1
    print(f"{n} task-thread samples ({dict(total)})\n")
    print("Coarse split (first matching component among the top 12 frames):")
    for k, v in comp.most_common():
        print(f"  {100 * v / n:5.1f}%  {k}")
    print("\nInclusive (a method anywhere on the stack):")
    for pat, v in sorted(incl.items(), key=lambda kv: -kv[1]):
        print(f"  {100 * v / n:5.1f}%  {pat}")
    print(f"\nTop {a.top} self frames:")
    for f, v in self_.most_common(a.top):
        print(f"  {100 * v / n:5.1f}%  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
