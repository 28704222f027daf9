"""One writer per notebook open in several windows without collaboration
(:class:`notebook_bcc.server.coedit.DocumentLeases`): the window with unsaved edits, else the
one that held it first; the writer is always a live holder; a lease that expires or is
released hands the notebook on. Property-based over sequences of heartbeats."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.server.coedit import DocumentLeases

PATH = "work/one.ipynb"


class Clock:
    """A clock the test advances (the leases' expiry is what is under test)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def leases(ttl: float = 10.0) -> tuple[DocumentLeases, Clock]:
    clock = Clock()
    return DocumentLeases(ttl=ttl, clock=clock), clock


def test_the_first_window_writes_until_another_has_unsaved_edits() -> None:
    held, clock = leases()
    held.hold("window-a", [PATH])
    clock.now = 1
    held.hold("window-b", [PATH])
    assert held.writer(PATH) == "window-a"
    clock.now = 2
    held.hold("window-b", [PATH], dirty=[PATH])  # the user types in the second window
    assert held.writer(PATH) == "window-b"
    clock.now = 3
    held.hold("window-a", [PATH], dirty=[PATH])  # ... and then in the first one too
    assert held.writer(PATH) == "window-b"  # the earliest with edits keeps it
    clock.now = 4
    held.hold("window-b", [PATH])  # the second window saved
    assert held.writer(PATH) == "window-a"


def test_a_closed_or_silent_window_hands_the_notebook_on() -> None:
    held, clock = leases(ttl=10)
    held.hold("window-a", [PATH])
    clock.now = 1
    held.hold("window-b", [PATH])
    held.release("window-a")
    assert held.writer(PATH) == "window-b"
    clock.now = 2
    held.hold("window-a", [PATH])  # reopened: it is the newer window now
    assert held.writer(PATH) == "window-b"
    clock.now = 11.5  # window-b's lease (until 11) expired, window-a's (until 12) has not
    assert held.writer(PATH) == "window-a"
    clock.now = 13  # both silent past their ttl
    assert held.writer(PATH) is None
    assert not held.held(PATH)


def test_a_rename_keeps_who_writes() -> None:
    held, clock = leases()
    held.hold("window-a", [PATH])
    clock.now = 1
    held.hold("window-b", [PATH], dirty=[PATH])
    held.renamed(PATH, "work/two.ipynb")
    assert held.writer("work/two.ipynb") == "window-b"
    assert held.writer(PATH) is None


WINDOWS = ["window-a", "window-b", "window-c"]
beats = st.lists(
    st.tuples(
        st.sampled_from(WINDOWS),
        st.booleans(),  # has the notebook open
        st.booleans(),  # with unsaved edits
        st.floats(min_value=0, max_value=6),  # seconds since the previous beat
    ),
    max_size=40,
)


@given(beats)
def test_the_writer_is_a_live_holder_and_prefers_unsaved_edits(
    sequence: list[tuple[str, bool, bool, float]],
) -> None:
    held, clock = leases(ttl=10)
    state: dict[str, tuple[float, bool, bool]] = {}  # window -> (last beat, open, dirty)
    for window, is_open, dirty, pause in sequence:
        clock.now += pause
        held.hold(window, [PATH] if is_open else [], [PATH] if is_open and dirty else [])
        state[window] = (clock.now, is_open, dirty)
        live = {w for w, (at, o, _) in state.items() if o and at + 10 >= clock.now}
        writer = held.writer(PATH)
        if not live:
            assert writer is None
            continue
        assert writer in live
        if any(state[w][2] for w in live):
            assert state[writer][2], (writer, state)
        # asking again without a beat changes nothing
        assert held.writer(PATH) == writer
