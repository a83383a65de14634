"""Where a run's memory peaks (issue 14): `harness run ARGS` in this process, with the peak RSS of each stage.

  python bench/stage_peaks.py run CONFIG --out DIR -q

Linux only. At each stage boundary (loading, retrieval, scoring the levels, diagnosing, assembling the records,
writing the outputs) it prints the RSS and the peak since the last boundary (``VmHWM``), then resets the peak
(``/proc/self/clear_refs``), so each line is that stage's own peak (the first line's: loading the corpus and golden set). ``/usr/bin/time`` gives only the run's peak,
not where it is. (Because the peak is reset, a ``time -v`` around this script understates the run's peak: the
largest "peak since" line is it.) Run it at two query counts over the same corpus to see what grows a query."""

from __future__ import annotations

import sys
import time

import harness.pipeline.assemble as assemble
import harness.render.outputs as outputs

START = time.time()


def _status() -> dict[str, float]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS", "VmHWM")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) / 1024
    return out


def mark(label: str) -> None:
    s = _status()
    print(f"[stage] {time.time() - START:7.1f} s  {label:24s} rss {s['VmRSS']:7.1f} MB   peak since the last line "
          f"{s['VmHWM']:7.1f} MB", file=sys.stderr)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the peak RSS (VmHWM) to the current RSS


def _around(owner, name: str, label: str) -> None:
    inner = getattr(owner, name)

    def wrapped(*args, **kwargs):
        mark(f"before {label}")
        out = inner(*args, **kwargs)
        mark(f"after {label}")
        return out

    setattr(owner, name, wrapped)


def main(argv: list[str]) -> None:
    # (the names run_experiment and build_result look up when they call them; write_outputs is imported by the CLI
    # at the call)
    for owner, name, label in ((assemble, "execute", "retrieval"), (assemble, "evaluate_levels", "levels"),
                               (assemble, "diagnose", "diagnose"), (assemble, "build_result", "build_result"),
                               (outputs, "write_outputs", "write_outputs")):
        _around(owner, name, label)
    from harness.cli.main import main as harness_main

    try:
        harness_main(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    mark("end")


if __name__ == "__main__":
    main(sys.argv[1:])
