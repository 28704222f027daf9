/**
 * Removing an earlier run's cells before a new workflow starts (src/earlierRun.ts): the
 * command line's rule (a cell with ``metadata.notebook_bcc`` is the workflow's, edited or
 * not), the blank cell of an emptied notebook, putting everything back after a refused start,
 * and when the server will let the new workflow replace the earlier one.
 *
 * The fake shared notebook behaves as Lab's does where it matters: inside ``transact`` its
 * ``cells`` still list the cells as they were (Lab refreshes the list when it ends).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  blankCell,
  countEarlierCells,
  earlierRunsYield,
  isWorkflowCell,
  removeEarlierCells,
  removeEarlierLabel,
  startRemovingEarlier,
  type CellData,
  type SharedNotebookView
} from '../src/earlierRun';
import type { WorkflowSummary } from '../src/types';

class FakeCell {
  constructor(readonly data: CellData) {}
  get id(): string {
    return this.data.id ?? '';
  }
  getMetadata(): unknown {
    return this.data.metadata ?? {};
  }
  getSource(): string {
    return String(this.data.source ?? '');
  }
  toJSON(): unknown {
    return JSON.parse(JSON.stringify(this.data));
  }
}

class FakeNotebook implements SharedNotebookView {
  private live: FakeCell[];
  private shown: FakeCell[];
  private depth = 0;
  private made = 0;
  metadata: Record<string, unknown>;

  constructor(cells: CellData[], metadata: Record<string, unknown> = {}) {
    this.live = cells.map(c => new FakeCell(c));
    this.shown = [...this.live];
    this.metadata = metadata;
  }
  get cells(): readonly FakeCell[] {
    return this.shown;
  }
  transact(f: () => void): void {
    this.depth++;
    try {
      f();
    } finally {
      this.depth--;
      if (this.depth === 0) {
        this.shown = [...this.live];
      }
    }
  }
  private settle(): void {
    if (this.depth === 0) {
      this.shown = [...this.live];
    }
  }
  deleteCell(index: number): void {
    assert.ok(index >= 0 && index < this.live.length, `delete at ${index}`);
    this.live.splice(index, 1);
    this.settle();
  }
  insertCells(index: number, cells: CellData[]): FakeCell[] {
    const made = cells.map(c => new FakeCell({ ...c, id: c.id ?? `new-${++this.made}` }));
    this.live.splice(index, 0, ...made);
    this.settle();
    return made;
  }
  getMetadata(key: string): unknown {
    return this.metadata[key];
  }
  setMetadata(key: string, value: never): void {
    this.metadata = { ...this.metadata, [key]: value };
  }
  ids(): string[] {
    return this.cells.map(c => c.id);
  }
  json(): unknown[] {
    return this.cells.map(c => c.toJSON());
  }
}

function user(id: string, source = `# ${id}`): CellData {
  return { id, cell_type: 'code', source, metadata: {}, outputs: [] };
}

function ours(id: string, workflow = 'wf-old', extra: Record<string, unknown> = {}): CellData {
  return {
    id,
    cell_type: 'code',
    source: `x_${id} = 1`,
    metadata: { notebook_bcc: { workflow_id: workflow, path: id }, ...extra },
    outputs: [{ output_type: 'stream', name: 'stdout', text: `${id}\n` }],
    execution_count: 3
  };
}

function summary(fields: Partial<WorkflowSummary>): WorkflowSummary {
  return {
    workflow_id: 'wf-old',
    notebook_path: 'nb.ipynb',
    version: 3,
    state: 'COMPLETED',
    run_status: 'completed',
    pending: 0,
    active: true,
    live: true,
    running: false,
    ...fields
  };
}

describe('isWorkflowCell', () => {
  it('is the command line rule: a notebook_bcc key in the metadata, whatever its value', () => {
    assert.equal(isWorkflowCell({ notebook_bcc: { workflow_id: 'a' } }), true);
    assert.equal(isWorkflowCell({ notebook_bcc: {}, tags: ['notebook-bcc-inputs'] }), true);
    assert.equal(isWorkflowCell({ notebook_bcc: null }), true);
    assert.equal(isWorkflowCell({ tags: ['notebook-bcc-inputs'] }), false);
    assert.equal(isWorkflowCell({}), false);
    assert.equal(isWorkflowCell(null), false);
    assert.equal(isWorkflowCell([]), false);
  });
});

describe('removeEarlierLabel', () => {
  it('names the count, singular or plural', () => {
    assert.equal(
      removeEarlierLabel(5),
      "Remove the earlier run's 5 cells (its record stays in the store)"
    );
    assert.equal(
      removeEarlierLabel(1),
      "Remove the earlier run's 1 cell (its record stays in the store)"
    );
  });
});

describe('removeEarlierCells', () => {
  it("removes every workflow cell, an edited one too, and keeps the user's cells in order", () => {
    const edited = ours('o2');
    edited.source = 'edited by the user';
    const nb = new FakeNotebook(
      [user('u1'), ours('o1'), edited, user('u2'), ours('o3', 'wf-older'), user('u3')],
      { notebook_bcc: { workflow_id: 'wf-old', schema_version: 1 }, kernelspec: { name: 'py' } }
    );
    assert.equal(countEarlierCells(nb), 3);
    const removed = removeEarlierCells(nb);
    assert.ok(removed);
    assert.equal(removed.count, 3);
    assert.deepEqual(nb.ids(), ['u1', 'u2', 'u3']);
    // the notebook no longer names the earlier workflow; its other keys stay
    assert.deepEqual(nb.metadata, { notebook_bcc: { schema_version: 1 }, kernelspec: { name: 'py' } });
    assert.equal(countEarlierCells(nb), 0);
  });

  it('gives a notebook left with no cell the blank cell Lab gives a new one', () => {
    const nb = new FakeNotebook([ours('inputs'), ours('o1'), ours('o2')]);
    const removed = removeEarlierCells(nb, blankCell('code'));
    assert.equal(removed?.count, 3);
    assert.equal(nb.cells.length, 1);
    const blank = nb.json()[0] as CellData;
    assert.equal(blank.cell_type, 'code');
    assert.equal(blank.source, '');
    assert.equal(isWorkflowCell(blank.metadata), false);
  });

  it('does nothing on a notebook without workflow cells', () => {
    const nb = new FakeNotebook([user('u1')], { notebook_bcc: { workflow_id: 'wf-x' } });
    assert.equal(removeEarlierCells(nb), null);
    assert.deepEqual(nb.ids(), ['u1']);
    assert.deepEqual(nb.metadata, { notebook_bcc: { workflow_id: 'wf-x' } });
  });

  it('puts everything back exactly where it was', () => {
    const cells = [ours('o0'), user('u1'), ours('o1'), ours('o2'), user('u2'), ours('o3')];
    const metadata = { notebook_bcc: { workflow_id: 'wf-old', schema_version: 1 } };
    const nb = new FakeNotebook(cells, metadata);
    const before = JSON.stringify(nb.json());
    const removed = removeEarlierCells(nb);
    assert.deepEqual(nb.ids(), ['u1', 'u2']);
    removed?.restore();
    assert.equal(JSON.stringify(nb.json()), before);
    assert.deepEqual(nb.metadata, metadata);
  });

  it('takes the blank cell out again when putting the cells back', () => {
    const nb = new FakeNotebook([ours('o1'), ours('o2')], {});
    const removed = removeEarlierCells(nb);
    assert.equal(nb.cells.length, 1);
    removed?.restore();
    assert.deepEqual(nb.ids(), ['o1', 'o2']);
    assert.deepEqual(nb.metadata, {});
  });

  it("puts the cells back after the user's cells that preceded them, after edits meanwhile", () => {
    const nb = new FakeNotebook([user('u1'), ours('o1'), user('u2'), ours('o2')]);
    const removed = removeEarlierCells(nb);
    nb.transact(() => {
      nb.insertCells(0, [user('typed')]); // the user added a cell while the start was refused
      nb.deleteCell(2); // ... and deleted u2
    });
    assert.deepEqual(nb.ids(), ['typed', 'u1']);
    removed?.restore();
    assert.deepEqual(nb.ids(), ['typed', 'u1', 'o1', 'o2']);
  });
});

describe('earlierRunsYield', () => {
  it('lets a finished or failed run be replaced, as the server does', () => {
    for (const run_status of ['completed', 'cancelled', 'failed'] as const) {
      assert.equal(earlierRunsYield([summary({ run_status })], 'nb.ipynb'), true, run_status);
    }
    assert.equal(earlierRunsYield([], 'nb.ipynb'), true);
  });
  it('keeps the cells of a run that is not finished (the server refuses the start)', () => {
    for (const run_status of ['waiting', 'paused', 'interrupted', 'running'] as const) {
      assert.equal(earlierRunsYield([summary({ run_status })], 'nb.ipynb'), false, run_status);
    }
    assert.equal(earlierRunsYield([summary({ run_status: 'failed', running: true })], 'nb.ipynb'), false);
    assert.equal(
      earlierRunsYield([summary({ run_status: 'failed', recovering: true })], 'nb.ipynb'),
      false
    );
  });
  it('looks only at the workflows that still hold this notebook', () => {
    const released = summary({ run_status: 'paused', active: false, released: 'deleted' });
    const elsewhere = summary({ run_status: 'waiting', notebook_path: 'other.ipynb' });
    assert.equal(earlierRunsYield([released, elsewhere], 'nb.ipynb'), true);
  });
});

describe('startRemovingEarlier', () => {
  function host(nb: FakeNotebook | null, workflows: WorkflowSummary[] | Error) {
    const saves: string[][] = [];
    return {
      saves,
      host: {
        notebook: () => nb,
        workflows: async () => {
          if (workflows instanceof Error) {
            throw workflows;
          }
          return workflows;
        },
        save: async () => {
          saves.push(nb?.ids() ?? []);
        }
      }
    };
  }

  it('removes the cells before the start and reports how many', async () => {
    const nb = new FakeNotebook([user('u1'), ours('o1'), ours('o2')]);
    const { host: h, saves } = host(nb, [summary({})]);
    let seen: string[] = [];
    const answer = await startRemovingEarlier(h, 'nb.ipynb', true, async () => {
      seen = nb.ids(); // what the start (the create) sees
      return 'wf-new';
    });
    assert.deepEqual(answer, { result: 'wf-new', removed: 2 });
    assert.deepEqual(seen, ['u1']);
    assert.deepEqual(saves, [['u1']]);
  });

  it('keeps the cells when not asked', async () => {
    const nb = new FakeNotebook([user('u1'), ours('o1')]);
    const { host: h } = host(nb, [summary({})]);
    const answer = await startRemovingEarlier(h, 'nb.ipynb', false, async () => 'wf-new');
    assert.deepEqual(answer, { result: 'wf-new', removed: 0 });
    assert.deepEqual(nb.ids(), ['u1', 'o1']);
  });

  it('keeps the cells of an unfinished run, or when the server cannot say', async () => {
    for (const workflows of [[summary({ run_status: 'waiting' })], new Error('offline')]) {
      const nb = new FakeNotebook([user('u1'), ours('o1')]);
      const { host: h, saves } = host(nb, workflows);
      let seen: string[] = [];
      await assert.rejects(
        startRemovingEarlier(h, 'nb.ipynb', true, async () => {
          seen = nb.ids();
          throw new Error('409 the notebook already has an active workflow');
        })
      );
      assert.deepEqual(seen, ['u1', 'o1']);
      assert.deepEqual(nb.ids(), ['u1', 'o1']);
      assert.deepEqual(saves, []);
    }
  });

  it('puts the cells back and saves when the start is refused', async () => {
    const nb = new FakeNotebook([user('u1'), ours('o1'), user('u2'), ours('o2')]);
    const { host: h, saves } = host(nb, [summary({ run_status: 'failed' })]);
    await assert.rejects(
      startRemovingEarlier(h, 'nb.ipynb', true, async () => {
        assert.deepEqual(nb.ids(), ['u1', 'u2']);
        throw new Error('400 input files not found');
      }),
      /input files not found/
    );
    assert.deepEqual(nb.ids(), ['u1', 'o1', 'u2', 'o2']);
    // saved without them before the start, with them again after the refusal
    assert.deepEqual(saves, [
      ['u1', 'u2'],
      ['u1', 'o1', 'u2', 'o2']
    ]);
  });

  it('does nothing when the notebook is not open here', async () => {
    const { host: h } = host(null, [summary({})]);
    const answer = await startRemovingEarlier(h, 'nb.ipynb', true, async () => 1);
    assert.deepEqual(answer, { result: 1, removed: 0 });
  });
});
