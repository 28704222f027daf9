/**
 * The save-time three-way merge (src/threeWay.ts): two windows on one notebook lose nothing
 * of each other's -- examples for each rule, then seeded random edits on both sides with the
 * invariants checked (every cell either side added is kept once, a cell either side deleted
 * and the other did not touch is gone, the user's own edit always wins).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { canonical, mergeCells, mergeNotebook, type CellJson } from '../src/threeWay';
import { random } from './helpers';

function cell(id: string, source: string, extra: Record<string, unknown> = {}): CellJson {
  return { id, cell_type: 'code', source, metadata: {}, outputs: [], ...extra } as CellJson;
}

function sources(cells: CellJson[]): string[] {
  return cells.map(c => String(c.source));
}

const BASE = [cell('a', 'x = 1'), cell('b', 'y = 2'), cell('c', 'z = 3')];

describe('mergeCells', () => {
  it('keeps what only I changed and takes what only they changed', () => {
    const mine = [cell('a', 'x = 10'), cell('b', 'y = 2'), cell('c', 'z = 3')];
    const theirs = [cell('a', 'x = 1'), cell('b', 'y = 2'), cell('c', 'z = 30')];
    assert.deepEqual(sources(mergeCells(BASE, mine, theirs)), ['x = 10', 'y = 2', 'z = 30']);
  });
  it('keeps my edit when both changed a cell', () => {
    const mine = [cell('a', 'mine'), BASE[1], BASE[2]];
    const theirs = [cell('a', 'theirs'), BASE[1], BASE[2]];
    assert.deepEqual(sources(mergeCells(BASE, mine, theirs)), ['mine', 'y = 2', 'z = 3']);
  });
  it('inserts their new cells after the cell that precedes them', () => {
    const mine = [...BASE, cell('m', 'my new cell')];
    const theirs = [BASE[0], cell('t1', 'theirs 1'), cell('t2', 'theirs 2'), BASE[1], BASE[2]];
    assert.deepEqual(sources(mergeCells(BASE, mine, theirs)), [
      'x = 1',
      'theirs 1',
      'theirs 2',
      'y = 2',
      'z = 3',
      'my new cell'
    ]);
  });
  it('puts a new first cell of theirs first', () => {
    const theirs = [cell('t', 'first'), ...BASE];
    assert.deepEqual(sources(mergeCells(BASE, BASE, theirs))[0], 'first');
  });
  it('drops a cell they deleted unless I changed it, and keeps my deletions', () => {
    const mine = [cell('a', 'x = 10'), BASE[2]]; // I deleted b, changed a
    const theirs = [BASE[1]]; // they deleted a and c
    assert.deepEqual(sources(mergeCells(BASE, mine, theirs)), ['x = 10']);
  });
  it('takes their outputs of a cell I did not touch (the workflow ran it)', () => {
    const ran = cell('b', 'y = 2', { outputs: [{ output_type: 'stream', text: ['2\n'] }] });
    const merged = mergeCells(BASE, BASE, [BASE[0], ran, BASE[2]]);
    assert.deepEqual(merged[1].outputs, ran.outputs);
  });
  it('treats a source as lines or as one string alike', () => {
    const lines = cell('a', '') as CellJson;
    lines.source = ['x = ', '1'];
    assert.equal(canonical(lines), canonical(BASE[0]));
  });
});

describe('mergeNotebook', () => {
  it('merges notebook metadata key by key', () => {
    const base = { cells: BASE, metadata: { kernelspec: 'py', bcc: 1 } };
    const mine = { cells: BASE, metadata: { kernelspec: 'py3', bcc: 1 } };
    const theirs = { cells: BASE, metadata: { kernelspec: 'py', bcc: 2, added: true } };
    assert.deepEqual(mergeNotebook(base, mine, theirs).metadata, {
      kernelspec: 'py3',
      bcc: 2,
      added: true
    });
  });
});

interface Side {
  cells: CellJson[];
  added: Set<string>;
  deleted: Set<string>;
  edited: Set<string>;
}

function edit(base: CellJson[], who: string, next: () => number): Side {
  const cells = base.map(c => ({ ...c }));
  const side: Side = { cells, added: new Set(), deleted: new Set(), edited: new Set() };
  const steps = Math.floor(next() * 6);
  for (let i = 0; i < steps; i++) {
    const roll = next();
    const at = Math.floor(next() * (cells.length + 1));
    if (roll < 0.4 || cells.length === 0) {
      const id = `${who}${i}`;
      cells.splice(at, 0, cell(id, `${who} new ${i}`));
      side.added.add(id);
    } else if (roll < 0.7) {
      const [gone] = cells.splice(Math.min(at, cells.length - 1), 1);
      side.deleted.add(gone.id);
    } else {
      const target = cells[Math.min(at, cells.length - 1)];
      target.source = `${String(target.source)} (${who} ${i})`;
      side.edited.add(target.id);
    }
  }
  return side;
}

describe('mergeCells on random edits of both sides', () => {
  it('keeps every added cell once, honours deletions and lets my edits win', () => {
    for (let seed = 1; seed <= 500; seed++) {
      const next = random(seed);
      const base = Array.from({ length: Math.floor(next() * 6) }, (_, i) =>
        cell(`b${i}`, `base ${i}`)
      );
      const mine = edit(base, 'm', next);
      const theirs = edit(base, 't', next);
      const merged = mergeCells(base, mine.cells, theirs.cells);
      const ids = merged.map(c => c.id);
      const context = `seed ${seed}: ${JSON.stringify(ids)}`;
      assert.equal(new Set(ids).size, ids.length, `duplicate cell, ${context}`);
      for (const id of [...mine.added, ...theirs.added]) {
        const alive = mine.cells.some(c => c.id === id) || theirs.cells.some(c => c.id === id);
        assert.equal(ids.includes(id), alive, `added cell ${id}, ${context}`);
      }
      for (const id of mine.deleted) {
        assert.ok(!ids.includes(id), `my deletion of ${id} undone, ${context}`);
      }
      for (const id of theirs.deleted) {
        const keptBecauseEdited = mine.edited.has(id) && !mine.deleted.has(id);
        assert.equal(ids.includes(id), keptBecauseEdited, `their deletion of ${id}, ${context}`);
      }
      for (const mineCell of mine.cells) {
        if (mine.edited.has(mineCell.id)) {
          const got = merged.find(c => c.id === mineCell.id);
          assert.equal(got?.source, mineCell.source, `my edit of ${mineCell.id}, ${context}`);
        }
      }
      // my order of the cells I kept is preserved
      const mineOrder = mine.cells.map(c => c.id).filter(id => ids.includes(id));
      assert.deepEqual(
        ids.filter(id => mineOrder.includes(id)),
        mineOrder,
        `my order, ${context}`
      );
    }
  });
});
