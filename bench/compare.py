"""Compares the figures in bench/results with those of an earlier commit, side by side.

    python bench/compare.py --base <commit> [--threshold 5] [--out bench/results/compare.md]

A figure is a number in a results file whose name says what is better: throughputs and
ratios (``per_s``, ``ratio``, ``speedup``, ``_vs_``) are better higher; times, latencies,
slowdowns and peaks (``_s``, ``_ms``, ``p50``, ``p99``, ``slowdown``, ``peak``) are better lower.
Inputs, parameters, environment and per-repetition lists are not figures. A figure that got worse
by more than the threshold (percent) is flagged; the exit status is 1 if any was. Files new since
the base are listed as new.
"""

import argparse
import json
import pathlib
import re
import subprocess
import sys

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
SKIP_SECTIONS = {"input", "parameters", "environment", "checks", "files", "goal", "warmup"}
HIGHER = re.compile(r"per_s|ratio|speedup|_vs_")
LOWER = re.compile(r"(_s|_ms|p50|p99|slowdown|peak|latency)")


def figures(node, path=()):
    """(path, value, better) for every figure in a results document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if not path and key in SKIP_SECTIONS:
                continue
            yield from figures(value, path + (str(key),))
    elif isinstance(node, (int, float)) and not isinstance(node, bool) and path:
        name = path[-1]
        if HIGHER.search(name) or any(HIGHER.search(p) for p in path[-2:-1]):
            yield ".".join(path), float(node), "higher"
        elif LOWER.search(name) and not name.endswith("_reps"):
            yield ".".join(path), float(node), "lower"


def load_at(commit, name):
    try:
        text = subprocess.run(
            ["git", "show", f"{commit}:bench/results/{name}"], check=True, capture_output=True, text=True
        ).stdout
    except subprocess.CalledProcessError:
        return None
    return json.loads(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="commit whose bench/results are the reference")
    ap.add_argument("--threshold", type=float, default=5.0, help="percent worse that is flagged")
    ap.add_argument("--out", default=str(RESULTS / "compare.md"))
    args = ap.parse_args()
    lines = [
        f"# Benchmark figures: {args.base} (old) vs working tree (new)",
        "",
        "| file | figure | better | old | new | change | |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    worse = 0
    for path in sorted(RESULTS.glob("*.json")):
        new = json.loads(path.read_text())
        old = load_at(args.base, path.name)
        if old is None:
            lines.append(f"| {path.name} | (new file) | | | | | |")
            continue
        old_figs = {p: v for p, v, _ in figures(old)}
        for p, v, better in figures(new):
            if p not in old_figs:
                continue
            o = old_figs[p]
            change = (v - o) / abs(o) * 100 if o else 0.0
            regressed = (change < -args.threshold) if better == "higher" else (change > args.threshold)
            worse += regressed
            lines.append(
                f"| {path.name} | {p} | {better} | {o:.4g} | {v:.4g} | {change:+.1f}% | "
                f"{'**worse**' if regressed else ''} |"
            )
    lines += ["", f"{worse} figure(s) worse by more than {args.threshold:g}%."]
    text = "\n".join(lines) + "\n"
    pathlib.Path(args.out).write_text(text)
    print(text)
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
