"""D8: where irreversibility comes from (the planner's flag, or a code pattern)."""

from __future__ import annotations

import pytest

from notebook_bcc.engine.irreversible import DEFAULT_PATTERNS, is_irreversible, matching_pattern


@pytest.mark.parametrize(
    "code",
    [
        "df.to_sql('prices', engine)",
        "cur.execute('INSERT INTO prices VALUES (1)')",
        "cur.execute('delete from prices')",
        "cur.execute('UPDATE prices SET x = 1')",
        "conn.commit()",
        "requests.post(url, json=payload)",
        "httpx.delete(url)",
        "urlopen(Request(url, method='PUT'))",
        "import smtplib",
        "server.sendmail(a, b, msg)",
        "os.remove('model.pkl')",
        "shutil.rmtree(out_dir)",
        "pathlib.Path('x').unlink()",
    ],
)
def test_side_effecting_code_matches_a_default_pattern(code: str) -> None:
    assert matching_pattern(code) is not None
    assert is_irreversible(code, flagged=False)[0] is True


@pytest.mark.parametrize(
    "code",
    [
        "df = pd.read_csv(path)",
        "requests.get(url)",
        "model.fit(X, y)",
        "print('update the plot')",
        "os.path.exists('x')",
    ],
)
def test_reversible_code_matches_nothing(code: str) -> None:
    assert matching_pattern(code) is None
    assert is_irreversible(code, flagged=False) == (False, None)


def test_the_planner_flag_wins() -> None:
    assert is_irreversible("x = 1", flagged=True) == (True, "planner")


def test_patterns_are_configurable() -> None:
    assert is_irreversible("launch()", flagged=False, patterns=[r"\blaunch\("]) == (
        True,
        r"\blaunch\(",
    )
    assert is_irreversible("os.remove(p)", flagged=False, patterns=[]) == (False, None)
    assert len(DEFAULT_PATTERNS) >= 10
