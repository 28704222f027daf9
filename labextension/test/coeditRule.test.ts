/**
 * The co-editing guard (src/coeditRule.ts): a merge plan applies only to the document it was
 * made for; an edit of a cell the plan would update must win over the plan.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { cellsEdited, opsStillApply } from '../src/coeditRule';

const SENT: Array<[string | null, string]> = [
  ['u1', 'mine'],
  ['a', 'x = 1']
];

describe('opsStillApply', () => {
  it('applies to an unchanged document', () => {
    assert.equal(opsStillApply(SENT, SENT, [{ op: 'update', index: 1, cell_id: 'a' }]), true);
  });
  it('applies when the user typed in their own cell meanwhile', () => {
    const now: Array<[string | null, string]> = [
      ['u1', 'mine, longer'],
      ['a', 'x = 1']
    ];
    assert.equal(opsStillApply(SENT, now, [{ op: 'insert', index: 2, cell_id: 'b' }]), true);
  });
  it('refuses when the user edited the cell the plan updates', () => {
    const now: Array<[string | null, string]> = [
      ['u1', 'mine'],
      ['a', 'x = 2']
    ];
    assert.equal(opsStillApply(SENT, now, [{ op: 'update', index: 1, cell_id: 'a' }]), false);
  });
  it('refuses when a cell was added, removed or moved meanwhile', () => {
    const added: Array<[string | null, string]> = [...SENT, ['u2', '']];
    const moved: Array<[string | null, string]> = [SENT[1], SENT[0]];
    const ops = [{ op: 'insert' as const, index: 2, cell_id: 'b' }];
    assert.equal(opsStillApply(SENT, added, ops), false);
    assert.equal(opsStillApply(SENT, moved, ops), false);
    assert.equal(opsStillApply(SENT, SENT.slice(1), ops), false);
  });
});

describe('cellsEdited', () => {
  const base = [
    { id: 'blank', cell_type: 'code', source: '' },
    { id: 'a', cell_type: 'code', source: ['x = 1\n', 'y = 2'] }
  ];
  it('is false for the same cells (outputs, metadata and source form aside)', () => {
    const now = [
      { id: 'blank', cell_type: 'code', source: '', outputs: [] },
      { id: 'a', cell_type: 'code', source: 'x = 1\ny = 2', execution_count: 3 }
    ];
    assert.equal(cellsEdited(base, now), false);
  });
  it('is true for typed, retyped, added, removed or moved cells', () => {
    assert.equal(cellsEdited(base, [base[0], { ...base[1], source: 'x = 1' }]), true);
    assert.equal(cellsEdited(base, [{ ...base[0], cell_type: 'markdown' }, base[1]]), true);
    assert.equal(cellsEdited(base, [...base, { id: 'b', cell_type: 'code', source: '' }]), true);
    assert.equal(cellsEdited(base, [base[1]]), true);
    assert.equal(cellsEdited(base, [base[1], base[0]]), true);
  });
  it('is true when the file as loaded is not known', () => {
    assert.equal(cellsEdited(undefined, base), true);
  });
});
