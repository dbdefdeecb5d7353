"""Run-to-run determinism of the update cycle (scripts/validate_determinism.py).

Two runs of one seed on a GPU may differ from their first update, while paths compared in
lockstep inside one process agree. This says at
which level the bits stop repeating: the same learner replaying its cycles from a restored
state (kernel nondeterminism, e.g. atomics); a second learner built in the same process (build
or compile choices); another process (compare the written fingerprints with --compare).
Each fingerprint is a SHA-256 of every state tensor's bytes after each cycle, kept per tensor
too, so that a difference names the state it is in (critic or actor weights, Adam moments,
reward statistics, RNG) -- which update of the cycle to look at first.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import torch

from flashsac_bench.bench.synthetic import Setup, build_learner
from flashsac_bench.learner.learner import FlashSACLearner


def tensor_digests(learner: FlashSACLearner) -> dict[str, str]:
    """Per state tensor: SHA-256 over its shape, dtype and bytes (one sync)."""
    out = {}
    for name, t in sorted(learner.state.tensors().items()):
        data = t.detach().contiguous().cpu()
        h = hashlib.sha256(f"{tuple(data.shape)}|{data.dtype}|".encode())
        h.update(data.flatten().view(torch.uint8).numpy().tobytes())
        out[name] = h.hexdigest()
    return out


def combined(digests: dict[str, str]) -> str:
    """One fingerprint of the whole state from its per-tensor digests."""
    return hashlib.sha256("".join(f"{k}={v};" for k, v in digests.items()).encode()).hexdigest()


def state_digest(learner: FlashSACLearner) -> str:
    """The whole state's fingerprint."""
    return combined(tensor_digests(learner))


def _cycles(
    learner: FlashSACLearner, start: dict[str, torch.Tensor], cycles: int
) -> tuple[list[str], list[dict[str, str]]]:
    learner.state.restore(start)
    per = [tensor_digests(learner)]
    for _ in range(cycles):
        learner.update()
        per.append(tensor_digests(learner))
    return [combined(d) for d in per], per


def fingerprints(setup: Setup, path: str, cycles: int) -> dict:
    """Digests of the initial state and after each of `cycles` cycles: a learner's first pass,
    its replay from the restored initial state, and a second learner's pass."""
    first = build_learner(setup, path)
    start = first.state.snapshot()  # before warmup: compile / capture must not move it
    first.warmup()
    a, a_tensors = _cycles(first, start, cycles)
    again, again_tensors = _cycles(first, start, cycles)
    del first
    second = build_learner(setup, path)
    own_start = second.state.snapshot()  # its own build: index 0 compares the initial states
    second.warmup()
    b, b_tensors = _cycles(second, own_start, cycles)
    return {
        "path": path,
        "first": a,
        "replayed": again,
        "second_learner": b,
        "tensors": {"first": a_tensors, "replayed": again_tensors, "second_learner": b_tensors},
    }


def first_mismatch(x: list[str], y: list[str]) -> int | None:
    """The first index (0: initial state, k: after cycle k) where two digest lists differ."""
    for i, (p, q) in enumerate(zip(x, y, strict=True)):
        if p != q:
            return i
    return None


def differing_tensors(x: dict[str, str], y: dict[str, str]) -> list[str]:
    """The state tensors whose digests differ (or that only one side has)."""
    return sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))


def where(run: dict, verdict: dict[str, int | None], other: dict | None = None) -> dict:
    """For each level that differs, the state tensors that differ at its first differing index
    (none listed against fingerprints written before per-tensor digests existed)."""
    mine = run["tensors"]["first"]
    theirs = {
        "replayed": run["tensors"]["replayed"],
        "second_learner": run["tensors"]["second_learner"],
        "other_process": (other or {}).get("tensors", {}).get("first"),
    }
    return {
        level: differing_tensors(mine[i], theirs[level][i])
        for level, i in verdict.items()
        if i is not None and theirs[level] is not None
    }


def verdicts(run: dict, other: dict | None = None) -> dict[str, int | None]:
    """'replayed' / 'second_learner' (/ 'other_process'): first differing index, None: same."""
    out = {
        "replayed": first_mismatch(run["first"], run["replayed"]),
        "second_learner": first_mismatch(run["first"], run["second_learner"]),
    }
    if other is not None:
        out["other_process"] = first_mismatch(run["first"], other["first"])
    return out


def validate(
    setup: Setup, paths: list[str], cycles: int, output: Path | None, compare: Path | None
) -> int:
    earlier = {}
    if compare is not None:
        other = json.loads(compare.read_text())
        if (other.get("setup"), other.get("cycles")) != (repr(setup), cycles):
            # fingerprints of another setup would all differ, at index 0: say why instead
            print(
                f"--compare {compare}: written for {other.get('setup')} with "
                f"{other.get('cycles')} cycles; this is {setup!r} with {cycles}",
                file=sys.stderr,
            )
            return 2
        earlier = {r["path"]: r for r in other["runs"]}
    runs, all_same = [], True
    print(
        f"{'path':>10} {'replayed':>10} {'2nd learner':>12} {'other process':>14}"
        "   (first differing cycle; '-' = identical; 0 = the initial state)"
    )
    for path in paths:
        run = fingerprints(setup, path, cycles)
        v = verdicts(run, earlier.get(path))
        run["verdicts"] = v
        run["differing_tensors"] = diff = where(run, v, earlier.get(path))
        runs.append(run)
        all_same &= all(x is None for x in v.values())
        cell = {k: "-" if x is None else str(x) for k, x in v.items()}
        print(
            f"{path:>10} {cell['replayed']:>10} {cell['second_learner']:>12} "
            f"{cell.get('other_process', 'n/a'):>14}"
        )
        for level, names in diff.items():
            if names:  # (empty only for hand-edited fingerprints)
                print(f"{'':>10} {level} differs in: {', '.join(names)}")
    if output is not None:
        report = {"setup": repr(setup), "cycles": cycles, "runs": runs, "identical": all_same}
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(report, indent=1) + "\n")
    print("DETERMINISTIC" if all_same else "NOT DETERMINISTIC")
    return 0 if all_same else 1
