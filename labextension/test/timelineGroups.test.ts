/**
 * The grouped timeline (src/timelineGroups.ts): contract and cell events of one action fold
 * into one row placed at its newest event; other events stay rows of their own.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { actionText, contractOf, groupTimeline } from '../src/timelineGroups';
import type { WorkflowEvent } from '../src/types';

function ev(seq: number, kind: WorkflowEvent['kind'], detail: Record<string, unknown> = {}): WorkflowEvent {
  return {
    workflow_id: 'wf',
    seq,
    version: seq,
    at: `2026-11-25T10:00:${String(seq).padStart(2, '0')}Z`,
    kind,
    actor: 'engine',
    run_status: 'running',
    detail
  };
}

const EVENTS: WorkflowEvent[] = [
  ev(1, 'transition'),
  ev(2, 'contract', { action: 'create_contract:c-a', action_type: 'cell_execution' }),
  ev(3, 'cell', { cell_id: 'x', contract_id: 'c-a', position: 0 }),
  ev(4, 'contract', { action: 'transition:c-a:pending→running', contract_id: 'c-a' }),
  ev(5, 'contract', { action: 'create_contract:c-b' }),
  ev(6, 'contract', { action: 'transition:c-a:running→succeeded', contract_id: 'c-a' }),
  ev(7, 'run'),
  ev(8, 'cell', { cell_id: 'y', position: 1 })
];

describe('contractOf', () => {
  it('reads contract_id, else the id in the action; transitions and bare cells have none', () => {
    assert.equal(contractOf(EVENTS[1]), 'c-a');
    assert.equal(contractOf(EVENTS[2]), 'c-a');
    assert.equal(contractOf(EVENTS[4]), 'c-b');
    assert.equal(contractOf(EVENTS[0]), null);
    assert.equal(contractOf(EVENTS[7]), null);
    assert.equal(contractOf(ev(9, 'contract', { action: 'free label' })), null);
  });
});

describe('groupTimeline', () => {
  it('folds each action into one row at its newest event, newest first', () => {
    const rows = groupTimeline(EVENTS);
    assert.deepEqual(
      rows.map(row => (row.kind === 'event' ? `event ${row.event.seq}` : `action ${row.contractId}`)),
      ['event 8', 'event 7', 'action c-a', 'action c-b', 'event 1']
    );
    const a = rows[2];
    assert.ok(a.kind === 'action');
    assert.deepEqual(
      a.events.map(e => e.seq),
      [2, 3, 4, 6]
    );
    assert.equal(a.status, 'succeeded');
    assert.equal(a.actionType, 'cell_execution');
    assert.equal(a.at, EVENTS[5].at);
    assert.equal(actionText(a), 'Action · cell execution · succeeded (4 events)');
    const b = rows[3];
    assert.ok(b.kind === 'action');
    assert.equal(actionText(b), 'Action · pending (1 event)');
  });

  it('keeps every event exactly once', () => {
    const rows = groupTimeline(EVENTS);
    const seqs = rows.flatMap(row => (row.kind === 'event' ? [row.event.seq] : row.events.map(e => e.seq)));
    assert.deepEqual(seqs.sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(groupTimeline([]), []);
  });
});
