/**
 * The in-place cell edits (src/inPlace.ts) that replace a revert: applied to the document's
 * cells they give exactly the target, and cells already right are left alone (the cell the
 * user types in keeps its editor). Examples, then seeded random pairs of cell lists.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { applyEdits, cellEdits } from '../src/inPlace';
import { canonical, type CellJson } from '../src/threeWay';
import { random } from './helpers';

function cell(id: string, source: string): CellJson {
  return { id, cell_type: 'code', source, metadata: {}, outputs: [] } as CellJson;
}

function texts(cells: readonly CellJson[]): string[] {
  return cells.map(canonical);
}

describe('cellEdits', () => {
  it('gives no edit when the cells are already the target', () => {
    const cells = [cell('a', 'x'), cell('b', 'y')];
    assert.deepEqual(cellEdits(cells, cells.map(c => ({ ...c }))), []);
  });
  it('inserts the new cells of a file another window saved and touches nothing else', () => {
    const mine = [cell('a', 'x'), cell('typing', 'from_sec')];
    const file = [cell('a', 'x'), cell('w1', 'workflow'), cell('typing', 'from_sec')];
    assert.deepEqual(cellEdits(mine, file), [{ kind: 'insert', index: 1, cell: file[1] }]);
  });
  it('updates a changed cell where it is, deletes a cell the target lacks', () => {
    const mine = [cell('a', 'x'), cell('b', 'old'), cell('gone', 'z')];
    const target = [cell('a', 'x'), cell('b', 'new')];
    assert.deepEqual(cellEdits(mine, target), [
      { kind: 'delete', index: 2 },
      { kind: 'update', index: 1, cell: target[1] }
    ]);
  });
  it('moves a cell rather than deleting and inserting it', () => {
    const mine = [cell('a', '1'), cell('b', '2'), cell('c', '3')];
    const target = [cell('c', '3'), cell('a', '1'), cell('b', '2')];
    const edits = cellEdits(mine, target);
    assert.ok(edits.every(e => e.kind === 'move'), JSON.stringify(edits));
    assert.deepEqual(texts(applyEdits(mine, edits)), texts(target));
  });
  it('drops a repeated id (a hand-edited file) and keeps its first cell', () => {
    const mine = [cell('a', '1'), cell('a', '1 again'), cell('b', '2')];
    const target = [cell('a', '1'), cell('b', '2')];
    assert.deepEqual(cellEdits(mine, target), [{ kind: 'delete', index: 1 }]);
  });
});

describe('cellEdits on random pairs', () => {
  it('always yields the target, with no edit of a cell already right', () => {
    for (let seed = 1; seed <= 1000; seed++) {
      const next = random(seed);
      const pool = Array.from({ length: 8 }, (_, i) => `c${i}`);
      const pick = (): CellJson[] =>
        pool
          .filter(() => next() < 0.6)
          .map(id => cell(id, next() < 0.3 ? `${id} changed` : id))
          .sort(() => next() - 0.5);
      const current = pick();
      const target = pick();
      const edits = cellEdits(current, target);
      const context = `seed ${seed}: ${JSON.stringify(current.map(c => c.id))} -> ${JSON.stringify(
        target.map(c => c.id)
      )}`;
      assert.deepEqual(texts(applyEdits(current, edits)), texts(target), context);
      const updated = new Set(edits.flatMap(e => (e.kind === 'update' ? [e.cell.id] : [])));
      for (const c of current) {
        const wanted = target.find(t => t.id === c.id);
        if (wanted && canonical(wanted) === canonical(c)) {
          assert.ok(!updated.has(c.id), `updated an unchanged cell ${c.id}, ${context}`);
        }
      }
      const inserted = edits.filter(e => e.kind === 'insert').length;
      const fresh = target.filter(t => !current.some(c => c.id === t.id)).length;
      assert.equal(inserted, fresh, `inserted a cell it had, ${context}`);
    }
  });
});
