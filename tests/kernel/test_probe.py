"""The variables probe on a real kernel, with pandas and numpy objects and scalar values."""

from __future__ import annotations

import pytest

from notebook_bcc.kernel import ProbeConfig, probe_variables
from notebook_bcc.models.actions import AddAction, ExecAction
from tests.kernel.conftest import KernelHarness, path

pytestmark = pytest.mark.timeout(60)


def run_code(kh: KernelHarness, source: str) -> None:
    """Add and execute one code cell on a fresh runner; it must succeed."""
    runner, _ = kh.runner()
    kh.act(runner, AddAction(content=source, shot_type="action"), path(0))
    outcome = kh.act(runner, ExecAction(codecell_id="lastAddedCellId"), path(1))
    assert outcome.ok, outcome.execution


def test_the_probe_never_imports_pandas_or_numpy(kh: KernelHarness) -> None:
    # First test of the module: nothing has imported pandas in this kernel yet.
    modules = "sorted(m for m in ('pandas', 'numpy') if m in __import__('sys').modules)"
    if kh.value(modules) != "[]":
        pytest.skip("pandas or numpy was already imported in this kernel")
    run_code(kh, "plain = [1, 2, 3]")
    report = kh.run(probe_variables(kh.session))
    assert report.error is None
    assert report.variables["plain"].length == 3
    assert kh.value(modules) == "[]"


def test_pandas_numpy_and_scalar_values(kh: KernelHarness) -> None:
    run_code(
        kh,
        "import numpy as np\n"
        "import pandas as pd\n"
        "df = pd.DataFrame({'price': np.arange(5, dtype='float64'), 'n': range(5)})\n"
        "series = df['price']\n"
        "matrix = np.zeros((3, 4), dtype='int32')\n"
        "rmse = np.float64(24000.5)\n"
        "count = 7\n"
        "ratio = 0.25\n"
        "name = 'housing'\n"
        "flag = True\n"
        "nothing = None\n"
        "missing_value = float('nan')\n"
        "long_text = 'x' * 1000\n"
        "items = list(range(100))\n"
        "mapping = {'a': 1, 'b': 2}\n"
        "def helper():\n    return 1\n",
    )
    report = kh.run(probe_variables(kh.session))
    v = report.variables
    assert report.error is None
    assert v["df"].type == "DataFrame"
    assert v["df"].shape == [5, 2]
    assert v["df"].dtypes == {"price": "float64", "n": "int64"}
    assert v["df"].length == 5
    assert v["df"].repr == "DataFrame 5x2"
    assert v["series"].shape == [5]
    assert v["series"].dtypes == {"price": "float64"}
    assert v["matrix"].shape == [3, 4]
    assert v["matrix"].dtypes == {"dtype": "int32"}
    assert v["rmse"].value == 24000.5
    assert v["count"].value == 7
    assert v["ratio"].value == 0.25
    assert v["name"].value == "housing"
    assert v["flag"].value is True
    assert v["nothing"].type == "NoneType"
    assert v["nothing"].value is None
    assert v["missing_value"].value is None
    assert v["missing_value"].repr == "nan"
    assert v["long_text"].value is None
    assert v["long_text"].length == 1000
    assert v["long_text"].repr is not None
    assert len(v["long_text"].repr) <= 80
    assert v["items"].length == 100
    assert "..." in (v["items"].repr or "")
    assert v["mapping"].length == 2
    assert v["helper"].type == "function"
    assert all(info.source == "kernel" for info in v.values())


def test_hidden_private_and_module_names_are_skipped(kh: KernelHarness) -> None:
    run_code(kh, "import os\n_private = 1\nvisible = 2")
    names = set(kh.run(probe_variables(kh.session)).variables)
    assert "visible" in names
    hidden = {"os", "np", "pd", "_private", "In", "Out", "get_ipython", "exit", "quit"}
    assert not names & hidden
    assert not any(name.startswith("_") for name in names)


def test_declared_artifacts_and_required_variables(kh: KernelHarness) -> None:
    (kh.cwd / "model.pkl").write_bytes(b"x")
    run_code(kh, "clean_df = 1")
    report = kh.run(probe_variables(kh.session, ["clean_df", "model.pkl", "absent_var"]))
    assert report.present == {"clean_df": "variable", "model.pkl": "file", "absent_var": None}
    assert report.missing == ["absent_var"]


def test_probe_works_after_an_error_and_after_reset(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    kh.act(runner, AddAction(content="after_error = 1\n1/0", shot_type="action"), path(0))
    failed = kh.act(runner, ExecAction(codecell_id="lastAddedCellId"), path(1))
    assert failed.execution is not None
    assert failed.execution.status == "error"
    report = kh.run(runner.probe(["after_error"]))
    assert report.error is None
    assert report.present["after_error"] == "variable"
    run_code(kh, "%reset -f\nfresh = 1")
    report = kh.run(probe_variables(kh.session))
    assert report.error is None
    assert set(report.variables) == {"fresh"}


def test_name_count_is_bounded(kh: KernelHarness) -> None:
    run_code(kh, "for i in range(30):\n    globals()[f'many_{i}'] = i")
    report = kh.run(probe_variables(kh.session, config=ProbeConfig(max_names=10)))
    assert len(report.variables) == 10
    assert report.total >= 30
    assert report.omitted == report.total - 10


def test_probe_timeout_is_reported_and_the_kernel_stays_usable(kh: KernelHarness) -> None:
    run_code(
        kh,
        "import time\n"
        "class Slow:\n"
        "    def __repr__(self):\n"
        "        time.sleep(20)\n"
        "        return 'slow'\n"
        "slow_thing = Slow()",
    )
    report = kh.run(probe_variables(kh.session, config=ProbeConfig(timeout=1.0)))
    assert report.error is not None
    assert "1 s" in report.error
    assert report.variables == {}
    assert kh.value("1 + 1") == "2"
    run_code(kh, "del slow_thing")
