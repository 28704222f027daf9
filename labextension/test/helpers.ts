/**
 * Shared helpers of the unit tests: the recorded panel snapshots and hand-made inputs.
 *
 * The fixtures live at the repository root (tests/fixtures/panel/, shared with the Python and
 * browser tests); they are found by walking up from this compiled file, so the tests run from
 * any working directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import type { PlanItem, WorkflowEvent, WorkflowSnapshot } from '../src/types';

function fixtureDir(): string {
  let dir = __dirname;
  for (;;) {
    const candidate = join(dir, 'tests', 'fixtures', 'panel');
    if (existsSync(candidate)) {
      return candidate;
    }
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(`tests/fixtures/panel not found above ${__dirname}`);
    }
    dir = parent;
  }
}

/** A fresh copy of a recorded snapshot (tests may change it freely). */
export function loadSnapshot(name: 'housing-completed' | 'housing-waiting'): WorkflowSnapshot {
  const text = readFileSync(join(fixtureDir(), `${name}.json`), 'utf8');
  return JSON.parse(text) as WorkflowSnapshot;
}

/** A plan item with only the given fields (plus the id). */
export function item(id: string, fields: Partial<PlanItem> = {}): PlanItem {
  return { id, ...fields };
}

const NO_OUTPUTS = { expected: [], produced: [], in_progress: [] };

/** A workflow just created: no plan, nothing run, nothing in the kernel. */
export function emptySnapshot(): WorkflowSnapshot {
  return {
    workflow_id: 'wf-empty',
    run_id: 'run-empty',
    notebook_path: 'empty.ipynb',
    version: 1,
    fsm: { state: 'idle', last_transition: null, history: [] },
    run: { status: 'paused', reason: null, since: null, pending: [] },
    location: {
      current: { stage_id: null, step_id: null, behavior_id: null, behavior_iteration: 0 },
      progress: {
        stages: { completed: [], current: null, remaining: [], current_outputs: NO_OUTPUTS },
        steps: { completed: [], current: null, remaining: [], current_outputs: NO_OUTPUTS },
        behaviors: { completed: [], current: null, remaining: [], current_outputs: NO_OUTPUTS }
      },
      goals: null
    },
    variables: {},
    effects: { current: [], history: [] },
    acceptance: {},
    gaps: [],
    metrics: {},
    usage: { calls: 0, prompt_tokens: 0, completion_tokens: 0, latency_ms: 0, per_stage: {} },
    planner: { kind: 'blueprint' }
  };
}

/** A stream event with defaults for everything but its sequence number. */
export function event(seq: number, fields: Partial<WorkflowEvent> = {}): WorkflowEvent {
  return {
    workflow_id: 'wf-test',
    seq,
    version: seq,
    at: `2026-11-22T03:00:${String(seq % 60).padStart(2, '0')}.000000Z`,
    kind: 'transition',
    from: 'step_running',
    event: 'START_BEHAVIOR',
    to: 'behavior_running',
    actor: 'planner',
    run_status: 'running',
    detail: {},
    ...fields
  };
}

/** A small seeded generator (mulberry32): the same seed gives the same sequence. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
