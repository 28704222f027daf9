"""Re-record ``examples/housing-ai`` through the real LLM planner.

The conversation lives in ``llm/``: one assistant reply per file, ``NNN-<agent-id>.txt``, in
the order the agents are asked. This script serves those replies from the scripted
OpenAI-compatible server (:mod:`notebook_bcc.testing.scripted_llm`, on loopback), runs

    notebook-bcc run --planner llm --llm-base-url http://127.0.0.1:PORT/v1
        --model scripted-housing --record DIR --auto-confirm --problem ... --file housing.csv

in a real kernel, and, when the run completed and every reply was served to the agent it was
written for, puts the new ``transcript.jsonl`` and ``inputs/`` in place of the old ones. A
failed recording leaves the committed one alone.

    .venv/bin/python examples/housing-ai/record.py            # rewrite this folder's recording
    .venv/bin/python examples/housing-ai/record.py --out DIR  # record somewhere else

No API key is involved: the key variables are removed from the run's environment.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from notebook_bcc.testing.scripted_llm import ScriptedLlmServer

HERE = Path(__file__).resolve().parent
REPLIES = HERE / "llm"
DATA = HERE.parent / "housing" / "data" / "housing.csv"
MODEL = "scripted-housing"
PROBLEM = (
    "Predict house sale prices from the submitted housing data. Success: held-out RMSE below "
    "18,000 and R² above 0.9 on a seeded split; export the final model for the pricing team."
)
KEY_VARIABLES = ("NOTEBOOK_BCC_LLM_API_KEY", "OPENAI_API_KEY")
RECORDED = ("transcript.jsonl", "inputs")
"""What a recording directory holds (and this script replaces)."""


def run_args(base_url: str, record: Path, notebook: Path) -> list[str]:
    """The ``notebook-bcc run`` command line of the recording."""
    return [
        sys.executable,
        "-m",
        "notebook_bcc",
        "run",
        "--planner",
        "llm",
        "--llm-base-url",
        base_url,
        "--model",
        MODEL,
        "--record",
        str(record),
        "--auto-confirm",
        "--problem",
        PROBLEM,
        "--file",
        str(DATA),
        "--notebook",
        str(notebook),
    ]


def feedback_retries(server: ScriptedLlmServer) -> list[str]:
    """The reply files the planner sent back (the next request quotes them as the assistant's
    turn, followed by the parse error)."""
    retried: list[str] = []
    for before, after in itertools.pairwise(server.received):
        name = before.answered.split(" ")[0]
        reply = REPLIES / name
        if not reply.is_file():
            continue
        text = reply.read_text(encoding="utf-8")
        if any(m.get("role") == "assistant" and m.get("content") == text for m in after.messages):
            retried.append(name)
    return retried


def install(staging: Path, out: Path) -> None:
    """Replace ``out``'s recording with the one in ``staging``."""
    out.mkdir(parents=True, exist_ok=True)
    for name in RECORDED:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        shutil.move(str(staging / name), str(target))


def record(out: Path) -> int:
    """Record the conversation into ``out``; 0 when it completed and was installed."""
    from notebook_bcc.testing.scripted_llm import ScriptedLlmServer

    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    with tempfile.TemporaryDirectory(prefix="housing-ai-record-") as tmp:
        work = Path(tmp)
        staging = work / "record"
        with ScriptedLlmServer(REPLIES) as server:
            done = subprocess.run(
                run_args(server.base_url, staging, work / "run" / "housing-ai.ipynb"),
                cwd=work,
                env=env,
                check=False,
            )
        problems = list(server.errors)
        if server.remaining:
            problems.append(f"{server.remaining} scripted repl(ies) were never asked for")
        if done.returncode != 0:
            problems.append(f"the run exited {done.returncode}")
        if problems:
            print("recording failed; the committed recording is unchanged:", file=sys.stderr)
            for problem in problems:
                print(f"  - {problem}", file=sys.stderr)
            return 1
        install(staging, out)
        retried = feedback_retries(server)
    print(
        f"recorded {out / RECORDED[0]}: {server.served} chat replies, "
        f"{len(retried)} sent back with a parse error ({', '.join(retried) or 'none'})"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and record."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=HERE,
        help="the record directory to (re)write (default: this example's folder)",
    )
    args = parser.parse_args(argv)
    return record(args.out.resolve())


if __name__ == "__main__":
    sys.exit(main())
