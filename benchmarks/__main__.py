"""Every benchmark in one process run and one table: ``python -m benchmarks`` (``make bench``).

The kernel-layer rows (issue 5, :mod:`benchmarks.kernel_bench`) run first, then the engine
rows (issue 7 §4, :mod:`benchmarks.engine_bench`). Each section measures its own R (the raw
jupyter_client ``x=1`` round trip) interleaved with what it measures, in this process run.
Target lines end with ``holds`` or ``MISSED``; the exit status is 0 unless ``--strict`` is
given and a target was missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from time import perf_counter

from benchmarks import engine_bench, kernel_bench
from benchmarks.kernel_bench import Line, render, versions

Section = Callable[[argparse.Namespace, Path, list[Line]], None]

SECTIONS: dict[str, tuple[str, Section]] = {
    "kernel": ("kernel layer (issue 5)", kernel_bench.collect),
    "engine": ("engine (issue 7 §4)", engine_bench.collect),
}


def main(argv: list[str] | None = None) -> int:
    """Run the selected sections and print one table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--only", choices=sorted(SECTIONS), help="run one section (default: all of them)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    kernel_bench.add_arguments(parser)
    engine_bench.add_arguments(parser)
    args = parser.parse_args(argv)
    print(f"notebook-bcc benchmarks ({versions()})", flush=True)
    lines: list[Line] = []
    for name, (title, collect) in SECTIONS.items():
        if args.only and args.only != name:
            continue
        print(f"running the {title} benchmarks ...", file=sys.stderr, flush=True)
        began = perf_counter()
        lines.append(Line(f"-- {title} --", ""))
        with tempfile.TemporaryDirectory(prefix=f"nbbcc-bench-{name}-") as tmp:
            collect(args, Path(tmp), lines)
        lines.append(Line(f"{name} section wall time", f"{perf_counter() - began:.0f} s"))
    print(render(lines))
    missed = any(line.holds is False for line in lines)
    return 1 if (missed and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
