/**
 * What a running workflow waits for from its planner (src/plannerWait.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { plannerWait, plannerWaitLine, waitedFor } from '../src/plannerWait';
import type { WorkflowSnapshot } from '../src/types';

const T0 = Date.parse('2026-11-25T10:00:00Z');

function snapshot(over: Record<string, unknown> = {}): WorkflowSnapshot {
  const base = {
    workflow_id: 'wf-1',
    run_id: 'r',
    version: 5,
    fsm: { state: 'behavior_running', timestamp: '2026-11-25T09:59:58Z', history: [] },
    run: { status: 'running', since: '2026-11-25T09:59:50Z', pending: [] },
    planner: { kind: 'http', settings: { url: 'http://127.0.0.1:8000' } },
    open_contracts: []
  };
  return { ...base, ...over } as unknown as WorkflowSnapshot;
}

describe('plannerWait', () => {
  it('says a running DSLC run between cells waits for its planner, since its last change', () => {
    const wait = plannerWait(snapshot(), '2026-11-25T09:59:59Z', 'live');
    assert.deepEqual(wait, {
      planner: 'DSLC at http://127.0.0.1:8000',
      asked: 'the next cells',
      since: Date.parse('2026-11-25T09:59:59Z')
    });
    assert.equal(
      plannerWaitLine(wait, T0 + 11_000),
      'Waiting for the planner (DSLC at http://127.0.0.1:8000) for the next cells — 12 s'
    );
  });
  it('names an LLM by model and URL', () => {
    const llm = snapshot({
      fsm: { state: 'idle', timestamp: null, history: [] },
      planner: { kind: 'llm', settings: { model: 'qwen', base_url: 'http://h/v1' } }
    });
    assert.equal(
      plannerWaitLine(plannerWait(llm, null, 'polling'), T0),
      'Waiting for the planner (LLM qwen at http://h/v1) for the stage plan — 10 s'
    );
  });
  it('is silent while a cell runs, a decision waits, or nothing drives the run here', () => {
    const cell = snapshot({ open_contracts: [{ execution_id: 'c', status: 'RUNNING' }] });
    assert.equal(plannerWait(cell, null, 'live'), null);
    assert.equal(plannerWait(snapshot({ fsm: { state: 'action_running', history: [] } }), null, 'live'), null);
    const waiting = snapshot({ run: { status: 'waiting', pending: [] } });
    assert.equal(plannerWait(waiting, null, 'live'), null);
    assert.equal(plannerWait(snapshot(), null, 'stored'), null);
    assert.equal(plannerWait(snapshot(), null, 'offline'), null);
  });
  it('is silent for planners that answer at once, and for a wait under a second', () => {
    assert.equal(plannerWait(snapshot({ planner: { kind: 'blueprint' } }), null, 'live'), null);
    assert.equal(plannerWait(snapshot({ planner: { kind: 'replay' } }), null, 'live'), null);
    const wait = plannerWait(snapshot(), '2026-11-25T10:00:00Z', 'live');
    assert.equal(plannerWaitLine(wait, T0 + 500), null);
    assert.match(plannerWaitLine(wait, T0 + 1000) ?? '', /— 1 s$/);
  });
  it('counts minutes and never goes below zero', () => {
    assert.equal(waitedFor(125_400), '2 min 5 s');
    assert.equal(waitedFor(-3000), '0 s');
  });
});
