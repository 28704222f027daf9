/**
 * The workflows list's plain words (src/workflowsRule.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ago, releasedTitle, splitReleased, summaryLine } from '../src/workflowsRule';
import type { WorkflowSummary } from '../src/types';

const NOW = new Date('2026-11-25T10:00:00Z');

function summary(over: Partial<WorkflowSummary>): WorkflowSummary {
  return {
    workflow_id: 'wf-1',
    notebook_path: 'a/b.ipynb',
    version: 3,
    state: 'action_running',
    run_status: 'running',
    pending: 0,
    active: true,
    live: true,
    running: true,
    last_activity: '2026-11-25T09:55:00Z',
    ...over
  };
}

describe('summaryLine', () => {
  it('says what a waiting workflow needs, in words', () => {
    const line = summaryLine(summary({ run_status: 'waiting', pending: 2 }), NOW);
    assert.equal(line.status, 'Waiting for you · 2 decisions to answer');
    assert.equal(line.detail, 'last activity 5 min ago');
  });
  it('says why a restarted server did not recover a workflow', () => {
    const message = 'the store was altered after it was written (cells row 3)';
    const line = summaryLine(
      summary({ live: false, not_recovered: { reason: 'altered', message } }),
      NOW
    );
    assert.match(line.detail, /not recovered by this server: the store was altered/);
    assert.doesNotMatch(line.detail, /not running in this server/);
  });
  it('names a deleted notebook and a paused reason', () => {
    const line = summaryLine(
      summary({
        notebook_path: null,
        run_status: 'paused',
        reason: 'the notebook a/b.ipynb was deleted',
        live: false
      }),
      NOW
    );
    assert.equal(line.notebook, 'notebook deleted');
    assert.equal(line.status, 'Paused: the notebook a/b.ipynb was deleted');
    assert.match(line.detail, /not running in this server/);
  });
});

describe('released workflows', () => {
  it('says a finished run finished, not that it was deleted or replaced', () => {
    const line = summaryLine(
      summary({
        active: false,
        live: false,
        running: false,
        run_status: 'completed',
        released: 'finished'
      }),
      NOW
    );
    assert.equal(line.status, 'Completed');
    assert.match(line.detail, /finished; its notebook is free for a new workflow/);
    assert.doesNotMatch(line.detail, /deleted|replaced|not running in this server/);
  });
  it('says a deleted workflow was deleted, a replaced one replaced', () => {
    const deleted = summaryLine(
      summary({ active: false, live: false, run_status: 'cancelled', released: 'deleted' }),
      NOW
    );
    assert.match(deleted.detail, /deleted from this list; its record stays/);
    assert.doesNotMatch(deleted.detail, /replaced/);
    const replaced = summaryLine(
      summary({ active: false, live: false, run_status: 'completed', released: 'replaced' }),
      NOW
    );
    assert.match(replaced.detail, /replaced by a newer workflow on its notebook/);
    assert.doesNotMatch(replaced.detail, /deleted/);
  });
  it('puts deleted and replaced workflows apart, finished ones stay, in the order given', () => {
    const a = summary({ workflow_id: 'a' });
    const b = summary({ workflow_id: 'b', active: false, live: false, released: 'deleted' });
    const c = summary({ workflow_id: 'c', live: false });
    const d = summary({ workflow_id: 'd', active: false, live: false, released: 'replaced' });
    // (a live workflow is never shown as released, whatever its flag says)
    const e = summary({ workflow_id: 'e', active: false, live: true, released: 'deleted' });
    const f = summary({ workflow_id: 'f', active: false, live: false, released: 'finished' });
    const { current, released } = splitReleased([a, b, c, d, e, f]);
    assert.deepEqual(
      current.map(w => w.workflow_id),
      ['a', 'c', 'e', 'f']
    );
    assert.deepEqual(
      released.map(w => w.workflow_id),
      ['b', 'd']
    );
    assert.equal(releasedTitle(released), 'Released (2): 1 deleted, 1 replaced by a newer workflow; their records stay');
    assert.equal(releasedTitle([b]), 'Released (1): 1 deleted; their records stay');
  });
});

describe('ago', () => {
  it('rounds down to the unit a person reads', () => {
    assert.equal(ago('2026-11-25T09:59:30Z', NOW), 'just now');
    assert.equal(ago('2026-11-25T07:00:00Z', NOW), '3 h ago');
    assert.equal(ago('2026-11-24T09:00:00Z', NOW), '1 day ago');
    assert.equal(ago(null, NOW), 'no activity yet');
  });
});
