"""Cost of tamper evidence in the store: ``python -m benchmarks.store_bench [--commits N]``.

Times N commits that each append a trace row and an event and upsert a contract and a cell
(the anchored chain heads and the contract/cell change logs ride in the same transaction),
then ``verify()`` over the result. Compare with an older checkout to see the overhead.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from time import perf_counter

from notebook_bcc.fsm.contract import create_contract
from notebook_bcc.models import new_snapshot
from notebook_bcc.models.records import TraceRecord
from notebook_bcc.store.sqlite import CellRow, Commit, EventDraft, SqliteStore


def run(commits: int) -> tuple[float, float]:
    """(ms per commit, seconds for verify)."""
    with tempfile.TemporaryDirectory(prefix="nbbcc-bench-store-") as folder:
        store = SqliteStore(Path(folder) / "state.sqlite")
        try:
            snap = store.create(new_snapshot("wf", "r", notebook_path="n.ipynb"))
            began = perf_counter()
            for version in range(commits):
                contract, _ = create_contract(
                    f"e{version}", "cell_execution", {"code": "x = 1\n" * 20}, workflow_id="wf"
                )
                cell = CellRow(f"c{version}", version, {"cell_type": "code", "source": "x = 1"})
                store.commit(
                    Commit(
                        snapshot=snap,
                        expected_version=version,
                        trace=[TraceRecord(actor="bench", action=f"a{version}", timestamp=1.0)],
                        contracts=[contract],
                        cells=[cell],
                        events=[EventDraft(kind="cell")],
                    )
                )
            per_commit = (perf_counter() - began) / commits * 1e3
            began = perf_counter()
            store.verify()
            return per_commit, perf_counter() - began
        finally:
            store.close()


def main(argv: list[str] | None = None) -> int:
    """Print one line of results."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store_bench")
    parser.add_argument("--commits", type=int, default=1_000)
    args = parser.parse_args(argv)
    per_commit, verify = run(args.commits)
    print(
        f"store: {args.commits} commits (trace + event + contract + cell each): "
        f"{per_commit:.2f} ms/commit; trace --verify over them: {verify:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
