"""Runs of gpu_overhead.py --in-process kept in a folder (--keep-runs DIR)
and read back (--from-runs DIR): one JSON file per process, named after
its model and numbered on from what the folder holds (mlp-1.json,
mlp-2.json, ...), so that calls with a time limit each can add processes
to one summary.

A file holds the process's key=value output of gpu_models.py --ab-rounds
(its ab_* timings and the device that ran them), its step log (every
step of every block), the regions it alternated, the settle steps and the
machine line of the call that ran it.
"""

import json
import os
import re
from dataclasses import dataclass

VERSION = 1
_NAME = re.compile(r"^(?P<model>.+)-(?P<number>[0-9]+)\.json$")


@dataclass
class KeptRun:
    model: str
    variants: list
    settle_steps: int
    machine: str
    values: dict  # gpu_models.py's key=value output
    steps: dict   # its step log: {block name: [[step ms, ...] per round]}
    path: str = ""


def keep(folder, kept):
    """Writes `kept` to the next free number of its model in `folder`
    (made if missing); returns its path. The file appears whole or not
    at all."""
    os.makedirs(folder, exist_ok=True)
    taken = [int(match.group("number")) for match in map(_NAME.match, os.listdir(folder))
             if match and match.group("model") == kept.model]
    path = os.path.join(folder, "%s-%d.json" % (kept.model, max(taken, default=0) + 1))
    partial = path + ".partial"
    with open(partial, "w") as f:
        json.dump({"version": VERSION, "model": kept.model, "variants": kept.variants,
                   "settle_steps": kept.settle_steps, "machine": kept.machine,
                   "values": kept.values, "steps": kept.steps}, f)
    os.replace(partial, path)
    return path


def load(folders, models=None):
    """The runs kept in `folders`, folder by folder, each model's in the
    order they were kept; only `models`' where given. Raises SystemExit
    with what is wrong where a file is not such a run, where there is
    none, or where the runs cannot share one table (other regions, settle
    steps or device)."""
    runs = []
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError as error:
            raise SystemExit("--from-runs %s: %s" % (folder, error.strerror))
        matches = sorted((match for match in map(_NAME.match, names) if match),
                         key=lambda match: (match.group("model"), int(match.group("number"))))
        for match in matches:
            if models is None or match.group("model") in models:
                runs.append(_read(os.path.join(folder, match.string)))
    if not runs:
        raise SystemExit("--from-runs: no kept runs%s in %s" % (
            " of " + ",".join(models) if models else "", ", ".join(folders)))
    first = runs[0]
    for run in runs[1:]:
        for what, mine, theirs in (
                ("regions", run.variants, first.variants),
                ("settle steps", run.settle_steps, first.settle_steps),
                ("device", run.values.get("device"), first.values.get("device"))):
            if mine != theirs:
                raise SystemExit(
                    "--from-runs: %s has %s %s and %s has %s: one table needs runs alike "
                    "(--models picks some)" % (run.path, what, _text(mine), first.path,
                                               _text(theirs)))
    return runs


def _text(value):
    return ",".join(value) if isinstance(value, list) else str(value)


def _read(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as error:
        raise SystemExit("--from-runs: %s cannot be read: %s" % (path, error))
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise SystemExit("--from-runs: %s is not a run kept by --keep-runs (version %s)" % (
            path, VERSION))
    try:
        run = KeptRun(str(data["model"]), list(data["variants"]), int(data["settle_steps"]),
                      str(data["machine"]), dict(data["values"]), dict(data["steps"]), path)
    except (KeyError, TypeError, ValueError) as error:
        raise SystemExit("--from-runs: %s lacks a field of a kept run: %s" % (path, error))
    missing = [name for name in ["plain"] + run.variants if name not in run.steps]
    if missing:
        raise SystemExit("--from-runs: %s has no steps of %s" % (path, ", ".join(missing)))
    return run
