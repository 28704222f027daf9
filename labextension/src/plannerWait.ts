/**
 * "Waiting for the planner (DSLC at http://…) for the next cells — 12 s": what a running
 * workflow waits for while a remote planner answers (pure, unit tested).
 *
 * Read from what the panel already has: a run that is ``running`` with no cell running,
 * at an FSM state whose next move is a question to the planner, asks its planner; it has
 * done so since its last recorded change (the newest of the FSM's and the run's timestamps
 * and the last event). Only planners that answer over the network (a DSLC server, an LLM)
 * are ever slow enough to say so; a blueprint or a replay answers at once.
 */
import type { ConnectionMode } from './live';
import type { WorkflowSnapshot } from './types';

/** FSM states whose next move is a planner question, and what it is asked for. */
const ASKED_FOR: Record<string, string> = {
  idle: 'the stage plan',
  stage_running: 'the steps of the stage',
  step_running: 'the next behavior',
  behavior_running: 'the next cells',
  behavior_completed: 'its review of the behavior',
  step_completed: 'its review of the step'
};

/** A wait shorter than this is not worth a line (a planner that answers at once). */
export const SHOW_AFTER_MS = 1000;

export interface PlannerWait {
  /** The planner in words: ``DSLC at URL``, ``LLM MODEL at URL``. */
  planner: string;
  /** What it was asked for, e.g. ``the next cells``. */
  asked: string;
  /** Since when (ms since the epoch). */
  since: number;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The planner in words, or null for one that answers at once. */
export function plannerWords(snapshot: WorkflowSnapshot): string | null {
  const settings = snapshot.planner.settings ?? {};
  switch (snapshot.planner.kind) {
    case 'http': {
      const url = text(settings['url']);
      return url ? `DSLC at ${url}` : 'DSLC server';
    }
    case 'llm': {
      const model = text(settings['model']);
      const url = text(settings['base_url']);
      return ['LLM', model, url ? `at ${url}` : ''].filter(Boolean).join(' ');
    }
    default:
      return null;
  }
}

/** What the run waits for from its planner now, or null when it does not. */
export function plannerWait(
  snapshot: WorkflowSnapshot,
  lastEventAt: string | null | undefined,
  mode: ConnectionMode
): PlannerWait | null {
  if (mode !== 'live' && mode !== 'polling') {
    return null; // no engine drives it here: nothing is asked
  }
  const asked = ASKED_FOR[snapshot.fsm.state];
  const planner = plannerWords(snapshot);
  if (snapshot.run.status !== 'running' || !asked || planner === null) {
    return null;
  }
  if ((snapshot.open_contracts ?? []).some(c => c.status === 'RUNNING' || c.status === 'WAITING')) {
    return null; // a cell runs (or waits for you): the kernel, not the planner
  }
  const times = [snapshot.fsm.timestamp, snapshot.run.since, lastEventAt]
    .map(t => (t ? Date.parse(t) : NaN))
    .filter(t => !Number.isNaN(t));
  if (times.length === 0) {
    return null;
  }
  return { planner, asked, since: Math.max(...times) };
}

/** "12 s", "2 min 5 s". */
export function waitedFor(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) {
    return `${seconds} s`;
  }
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${seconds % 60} s`;
}

/** The line the header shows, or null (no wait, or one too short to mention). */
export function plannerWaitLine(wait: PlannerWait | null, now: number): string | null {
  if (wait === null || now - wait.since < SHOW_AFTER_MS) {
    return null;
  }
  return `Waiting for the planner (${wait.planner}) for ${wait.asked} — ${waitedFor(now - wait.since)}`;
}
