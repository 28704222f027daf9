/**
 * Navigation (src/navigate.ts): which cells a plan node or contract names, which cell to
 * follow, and the badge text -- from cells shaped like the ones the kernel writes.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { badgeText, cellMark, followIndex, matchingCells, ofWorkflow, type CellMark } from '../src/navigate';

function bcc(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    workflow_id: 'wf-1',
    path: 'x',
    visit: 1,
    iteration: 1,
    action_type: 'add_cell',
    kind: 'code',
    status: 'ok',
    created_at: '2026-11-25T10:00:00Z',
    ...fields
  };
}

// a user's cell, two stages, a step with two behaviors
const CELLS: unknown[] = [
  undefined,
  bcc({ stage_id: 'explore', step_id: 'look', behavior_id: 'b1', contract_id: 'c-1' }),
  bcc({ stage_id: 'explore', step_id: 'look', behavior_id: 'b2', contract_id: 'c-2' }),
  { note: 'not ours' },
  bcc({ stage_id: 'model', step_id: 'fit', behavior_id: 'b1', contract_id: 'c-3' }),
  bcc({ stage_id: 'model', step_id: 'fit', behavior_id: 'b1', contract_id: null, kind: 'markdown' })
];

function marks(cells: unknown[] = CELLS): CellMark[] {
  return cells.map((c, i) => cellMark(i, c)).filter((m): m is CellMark => m !== null);
}

describe('cellMark', () => {
  it('reads the kernel-written block and refuses what is not one', () => {
    assert.equal(cellMark(0, undefined), null);
    assert.equal(cellMark(0, 'x'), null);
    assert.equal(cellMark(0, [1]), null);
    const mark = cellMark(4, CELLS[4]);
    assert.deepEqual(mark, {
      index: 4,
      stage: 'model',
      visit: 1,
      step: 'fit',
      behavior: 'b1',
      iteration: 1,
      contract: 'c-3',
      status: 'ok',
      createdAt: '2026-11-25T10:00:00Z',
      startedAt: null,
      endedAt: null,
      waitedS: null,
      workflow: 'wf-1'
    });
    assert.equal(cellMark(0, { stage_id: 's', waited_s: 12.5 })?.waitedS, 12.5);
    assert.equal(cellMark(0, { stage_id: 5, visit: 'x' })?.stage, null);
  });
});

describe('ofWorkflow', () => {
  it("keeps the shown workflow's cells: an earlier run's share its stage ids", () => {
    const again = [...CELLS, bcc({ workflow_id: 'wf-2', stage_id: 'explore', step_id: 'look', behavior_id: 'b1', contract_id: 'c-9' })];
    const all = marks(again);
    assert.deepEqual(matchingCells(all, { stage: 'explore' }), [1, 2, 6]);
    assert.deepEqual(matchingCells(ofWorkflow(all, 'wf-2'), { stage: 'explore' }), [6]);
    assert.deepEqual(matchingCells(ofWorkflow(all, 'wf-1'), { stage: 'explore' }), [1, 2]);
    assert.equal(ofWorkflow(all, null).length, all.length);
  });
});

describe('matchingCells', () => {
  it('narrows by stage, step and behavior, and finds a contract alone', () => {
    const all = marks();
    assert.deepEqual(matchingCells(all, { stage: 'explore' }), [1, 2]);
    assert.deepEqual(matchingCells(all, { stage: 'explore', step: 'look', behavior: 'b2' }), [2]);
    // the same behavior id under another stage is another behavior
    assert.deepEqual(matchingCells(all, { stage: 'model', step: 'fit', behavior: 'b1' }), [4, 5]);
    assert.deepEqual(matchingCells(all, { contract: 'c-3' }), [4]);
    assert.deepEqual(matchingCells(all, { contract: 'c-9', stage: 'explore' }), []);
    assert.deepEqual(matchingCells(all, {}), []);
    assert.deepEqual(matchingCells(all, { stage: 'nowhere' }), []);
  });

  it('opens one visit of a re-entered stage, not the cells of its other visits', () => {
    const visited = marks([
      bcc({ stage_id: 'ratio', step_id: 'compute', behavior_id: 'b', visit: 1 }),
      bcc({ stage_id: 'other', step_id: 's', behavior_id: 'b', visit: 1 }),
      bcc({ stage_id: 'ratio', step_id: 'compute', behavior_id: 'b', visit: 2 }),
      bcc({ stage_id: 'ratio', step_id: 'compute', behavior_id: 'b', visit: 2 })
    ]);
    assert.deepEqual(matchingCells(visited, { stage: 'ratio', visit: 2 }), [2, 3]);
    assert.deepEqual(matchingCells(visited, { stage: 'ratio', visit: 1 }), [0]);
    assert.deepEqual(matchingCells(visited, { stage: 'ratio' }), [0, 2, 3], 'every visit');
    const step = { stage: 'ratio', visit: 2, step: 'compute', behavior: 'b' };
    assert.deepEqual(matchingCells(visited, step), [2, 3]);
    assert.deepEqual(matchingCells(visited, { contract: 'c-1', visit: 2 }), []);
  });
});

describe('followIndex', () => {
  it('follows the running cell, else the newest workflow cell', () => {
    assert.equal(followIndex([]), null);
    assert.equal(followIndex(marks()), 5);
    const running = CELLS.slice();
    running[2] = bcc({ stage_id: 'explore', status: 'running' });
    assert.equal(followIndex(marks(running)), 2);
    const older = CELLS.slice();
    older[5] = bcc({ stage_id: 'model', created_at: '2026-11-25T09:00:00Z' });
    older[1] = bcc({ stage_id: 'explore', created_at: '2026-11-25T11:00:00Z' });
    assert.equal(followIndex(marks(older)), 1, 'a cell the user moved up is still the newest');
  });
});

describe('badgeText', () => {
  it('names stage and step, with the behavior and visits in its title', () => {
    const badge = badgeText(cellMark(2, CELLS[2]) as CellMark);
    assert.deepEqual(badge, {
      text: 'explore · look',
      title: 'Written by the workflow: Stage explore, step look, behavior b2'
    });
    const again = badgeText(
      cellMark(0, bcc({ stage_id: 's', visit: 2, step_id: 't', behavior_id: 'b', iteration: 3 })) as CellMark
    );
    assert.equal(again?.title, 'Written by the workflow: Stage s (visit 2), step t, behavior b (iteration 3)');
    assert.equal(badgeText(cellMark(0, bcc({})) as CellMark), null);
    assert.deepEqual(badgeText(cellMark(0, bcc({ stage_id: '_inputs', step_id: '_inputs' })) as CellMark), {
      text: 'workflow inputs',
      title: 'Written by the workflow: its inputs cell'
    });
  });
});
