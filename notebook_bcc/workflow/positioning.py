"""Stage and step positioning: ``insert_before``, ``insert_after``, ``replaces`` (DESIGN §4).

:func:`arrange` builds a new ordered plan from the current one and the planner's items, and the
:class:`PlanDiff` between them. :func:`split` then lays the new order over the progress of a level
(what is completed stays completed, the running item keeps running).

Rules, in order:
- A plan with no positioned item and ``replace_all`` is the new plan as given (a fresh plan;
  an item with the id of a planned one redefines it, see :func:`merge_definition`).
- Otherwise the current plan is the base. Items without a position replace the item with the
  same id in place, or are appended; then positioned items are placed, in document order, so a
  position may name an item of the same payload whatever its order.
- ``replaces="x"`` takes x's place; ``insert_before``/``insert_after`` put the item next to its
  anchor (moving it if it was already planned). An unknown anchor, two positions on one item,
  or a replacement whose id is already planned elsewhere is a :class:`PlanConflict`.
- ``optional`` is kept on the item (``PlanItem.optional``); it never reorders anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from notebook_bcc.models.snapshot import LevelProgress, Outputs, PlanItem
from notebook_bcc.workflow.items import Positioned
from notebook_bcc.workflow.result import PlanDiff, Replacement

PLAN_FIELDS = frozenset(
    {
        "title",
        "goal",
        "verified_artifacts",
        "required_variables",
        "acceptance",
        "focus",
        "optional",
        "pcs_considerations",
        "agent",
        "task",
        "inputs",
        "outputs",
    }
)
"""Fields that make up an item's definition (the rest records what happened to it)."""


class PlanConflict(ValueError):
    """A positioning that cannot be honoured; the message says which item and why."""


def definition(item: PlanItem) -> dict[str, object]:
    """The planning fields of ``item`` (what a diff compares)."""
    return item.model_dump(mode="json", include=set(PLAN_FIELDS))


def merge_definition(old: PlanItem, new: PlanItem) -> PlanItem:
    """``old`` redefined by ``new``: every planning field ``new`` gives (non-empty) wins.

    What ``new`` leaves empty keeps ``old``'s value (a template stage with only a title keeps
    its goal and artifacts), and ``old``'s record (visits, status, artifacts) is kept.
    """
    update = {
        name: getattr(new, name)
        for name in PLAN_FIELDS
        if getattr(new, name) not in (None, [], {}, False)
    }
    if new.optional != old.optional and "optional" in new.model_fields_set:
        update["optional"] = new.optional
    extra = {**old.extra, **new.extra}
    return old.model_copy(update={**update, "extra": extra})


def _index(items: list[PlanItem], item_id: str) -> int:
    for index, item in enumerate(items):
        if item.id == item_id:
            return index
    return -1


def _check(entry: Positioned, level: str) -> None:
    given = [
        name
        for name in ("insert_before", "insert_after", "replaces")
        if getattr(entry, name) is not None
    ]
    if len(given) > 1:
        raise PlanConflict(
            f"{level[:-1]} {entry.item.id!r} has {' and '.join(given)}: give one position only"
        )
    anchor = entry.insert_before or entry.insert_after or entry.replaces
    if anchor == entry.item.id and not entry.replaces:
        raise PlanConflict(f"{level[:-1]} {entry.item.id!r} is positioned relative to itself")


@dataclass
class _Arranger:
    level: str
    result: list[PlanItem]
    replaced: list[Replacement]
    moved: list[str]

    @property
    def noun(self) -> str:
        """``stage`` or ``step``."""
        return self.level[:-1]

    def put(self, entry: Positioned) -> None:
        """Place one item (see the module docstring)."""
        item = entry.item
        if entry.replaces is not None:
            self.replace(entry.replaces, item)
            return
        anchor = entry.insert_before or entry.insert_after
        if anchor is None:
            at = _index(self.result, item.id)
            if at >= 0:
                self.result[at] = merge_definition(self.result[at], item)
            else:
                self.result.append(item)
            return
        existing = _index(self.result, item.id)
        if existing >= 0:
            old = self.result.pop(existing)
            item = merge_definition(old, item)
            self.moved.append(item.id)
        at = _index(self.result, anchor)
        if at < 0:
            raise PlanConflict(
                f"{self.noun} {item.id!r} is to go "
                f"{'before' if entry.insert_before else 'after'} {anchor!r}, "
                f"which is not in the plan"
            )
        self.result.insert(at if entry.insert_before else at + 1, item)

    def replace(self, target: str, item: PlanItem) -> None:
        """``item`` takes the place of ``target``."""
        at = _index(self.result, target)
        if at < 0:
            raise PlanConflict(
                f"{self.noun} {item.id!r} replaces {target!r}, which is not in the plan"
            )
        if item.id == target:
            self.result[at] = merge_definition(self.result[at], item)
            return
        if _index(self.result, item.id) >= 0:
            raise PlanConflict(
                f"{self.noun} {item.id!r} replaces {target!r} but {item.id!r} is already planned"
            )
        self.result[at] = item
        self.replaced.append(Replacement(old=target, new=item.id))


def arrange(
    base: list[PlanItem], incoming: list[Positioned], level: str, *, replace_all: bool
) -> tuple[list[PlanItem], PlanDiff]:
    """The new ordered plan and its diff from ``base`` (see the module docstring for rules)."""
    for entry in incoming:
        _check(entry, level)
    arranger = _Arranger(level=level, result=[], replaced=[], moved=[])
    if replace_all and not any(entry.positioned for entry in incoming):
        known = {item.id: item for item in base}
        arranger.result = [
            merge_definition(known[entry.item.id], entry.item)
            if entry.item.id in known
            else entry.item
            for entry in incoming
        ]
    else:
        arranger.result = list(base)
        for entry in incoming:
            if not entry.positioned:
                arranger.put(entry)
        for entry in incoming:
            if entry.positioned:
                arranger.put(entry)
    return arranger.result, _diff(base, arranger, level)


def _diff(base: list[PlanItem], arranger: _Arranger, level: str) -> PlanDiff:
    result = arranger.result
    base_by_id = {item.id: item for item in base}
    new_ids = {item.id for item in result}
    replaced_old = {r.old for r in arranger.replaced}
    replaced_new = {r.new for r in arranger.replaced}
    added = [
        item.id for item in result if item.id not in base_by_id and item.id not in replaced_new
    ]
    removed = [item.id for item in base if item.id not in new_ids and item.id not in replaced_old]
    changed = [
        item.id
        for item in result
        if item.id in base_by_id and definition(item) != definition(base_by_id[item.id])
    ]
    moved = list(dict.fromkeys(arranger.moved))
    if not moved:
        # a plan that re-entered stages lists them more than once: compare first occurrences
        common_old = list(dict.fromkeys(item.id for item in base if item.id in new_ids))
        common_new = list(dict.fromkeys(item.id for item in result if item.id in base_by_id))
        moved = [new for old, new in zip(common_old, common_new, strict=True) if old != new]
    return PlanDiff(
        level=level,
        added=added,
        removed=removed,
        replaced=list(arranger.replaced),
        moved=moved,
        changed=changed,
    )


def all_items(progress: LevelProgress) -> list[PlanItem]:
    """Completed, current and remaining items of a level, in plan order."""
    current = [progress.current] if progress.current is not None else []
    return [*progress.completed, *current, *progress.remaining]


@dataclass(frozen=True)
class Split:
    """A new plan order laid over a level's progress."""

    progress: LevelProgress
    notes: list[str]


def split(progress: LevelProgress, plan: list[PlanItem], level: str) -> Split:
    """Lay ``plan`` over ``progress``: completed items stay completed, the current one runs on.

    The current item takes its new definition when the plan still holds it; when the plan
    dropped or replaced it, it still finishes first (a running item is never yanked) and a note
    says so. Everything else in ``plan`` becomes ``remaining``, in plan order.
    """
    notes: list[str] = []
    done = {item.id for item in progress.completed}
    current = progress.current
    outputs = progress.current_outputs
    if current is not None:
        at = _index(plan, current.id)
        if at >= 0:
            current = merge_definition(current, plan[at])
            expected = list(dict.fromkeys([*current.verified_artifacts, *outputs.expected]))
            described = {**outputs.descriptions, **_described(current.verified_artifacts)}
            outputs = outputs.model_copy(update={"expected": expected, "descriptions": described})
        else:
            notes.append(
                f"the running {level[:-1]} {current.id!r} is not in the new plan; it finishes first"
            )
    running = current.id if current is not None else None
    remaining = [item for item in plan if item.id not in done and item.id != running]
    return Split(
        progress=progress.model_copy(
            update={"current": current, "remaining": remaining, "current_outputs": outputs}
        ),
        notes=notes,
    )


def _described(names: dict[str, str]) -> dict[str, str]:
    """The entries of a name map that carry a description."""
    return {name: text for name, text in names.items() if text}


def start_first(progress: LevelProgress) -> LevelProgress:
    """Make the first remaining item current (visits + 1), its artifacts the expected outputs."""
    if not progress.remaining:
        return progress.model_copy(update={"current": None, "current_outputs": Outputs()})
    first, *rest = progress.remaining
    first = first.model_copy(update={"visits": first.visits + 1})
    return progress.model_copy(
        update={
            "current": first,
            "remaining": rest,
            "current_outputs": Outputs(
                expected=list(first.verified_artifacts),
                descriptions=_described(first.verified_artifacts),
            ),
        }
    )
