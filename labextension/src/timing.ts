/**
 * Time spent per stage, step and behavior, from the times workflow cells record in their
 * ``metadata.notebook_bcc`` (``created_at`` when written, ``started_at`` / ``ended_at`` when
 * run). The snapshot's FSM history is only a bounded tail and does not name the stage of a
 * transition, so the cells are the complete record.
 *
 * One pass of a node (a stage visit, a behavior iteration) lasts from its first cell's
 * creation to its last cell's end (``now`` while a cell of it runs), less the time its cells
 * waited for a human (``waited_s``: an irreversible action's confirmation); a node's time is
 * the sum of its passes, over all its stage's visits (:func:`timeKey`) and within one visit
 * (:func:`visitTimeKey`). Pure, unit-tested.
 */
import type { CellMark } from './navigate';

export interface NodeTime {
  /** Seconds, summed over the node's passes. */
  seconds: number;
  /** A cell of this node is running (its time still grows). */
  running: boolean;
}

/** Map keys: ``stage``, ``stage/step``, ``stage/step/behavior``: a node over all its stage's
 *  visits. */
export function timeKey(stage: string, step?: string | null, behavior?: string | null): string {
  return [stage, step, behavior].filter(part => part).join('/');
}

/** Map keys of a node within one visit of its stage (``stage/step@2``): a re-entered stage is
 *  listed once per visit in the plan, each with that visit's time. */
export function visitTimeKey(
  visit: number,
  stage: string,
  step?: string | null,
  behavior?: string | null
): string {
  return `${timeKey(stage, step, behavior)}@${visit}`;
}

function ms(iso: string | null): number | null {
  if (!iso) {
    return null;
  }
  const value = Date.parse(iso);
  return Number.isNaN(value) ? null : value;
}

interface Pass {
  start: number;
  end: number;
  running: boolean;
  /** Milliseconds its cells waited for a human. */
  waited: number;
}

/** Seconds per stage, step and behavior key (see :func:`timeKey`); ``now`` in epoch ms. */
export function nodeTimes(marks: readonly CellMark[], now: number): Map<string, NodeTime> {
  // pass key -> the node keys it counts for (over all visits, and in its visit), span
  const passes = new Map<string, { nodes: string[]; pass: Pass }>();
  const add = (
    nodes: string[],
    passKey: string,
    start: number,
    end: number,
    running: boolean,
    waited: number
  ): void => {
    const known = passes.get(passKey);
    if (!known) {
      passes.set(passKey, { nodes, pass: { start, end, running, waited } });
      return;
    }
    known.pass.start = Math.min(known.pass.start, start);
    known.pass.end = Math.max(known.pass.end, end);
    known.pass.running = known.pass.running || running;
    known.pass.waited += waited;
  };
  for (const mark of marks) {
    if (!mark.stage) {
      continue;
    }
    const created = ms(mark.createdAt);
    const started = ms(mark.startedAt);
    const ended = ms(mark.endedAt);
    const running = mark.status === 'running';
    const starts = [created, started].filter((v): v is number => v !== null);
    if (!starts.length) {
      continue;
    }
    const start = Math.min(...starts);
    const end = running ? Math.max(now, start) : Math.max(start, ...[ended, created].filter((v): v is number => v !== null));
    const waited = Math.max(0, (mark.waitedS ?? 0) * 1000);
    const number = mark.visit ?? 1;
    const visit = `#${number}`;
    const iteration = `#${mark.iteration ?? 1}`;
    const keys = (step?: string | null, behavior?: string | null): string[] => [
      timeKey(mark.stage as string, step, behavior),
      visitTimeKey(number, mark.stage as string, step, behavior)
    ];
    add(keys(), `${mark.stage}${visit}`, start, end, running, waited);
    if (mark.step) {
      add(keys(mark.step), `${mark.stage}${visit}/${mark.step}`, start, end, running, waited);
      if (mark.behavior) {
        add(
          keys(mark.step, mark.behavior),
          `${mark.stage}${visit}/${mark.step}/${mark.behavior}${iteration}`,
          start,
          end,
          running,
          waited
        );
      }
    }
  }
  const times = new Map<string, NodeTime>();
  for (const { nodes, pass } of passes.values()) {
    for (const node of nodes) {
      const known = times.get(node) ?? { seconds: 0, running: false };
      known.seconds += Math.max(0, pass.end - pass.start - pass.waited) / 1000;
      known.running = known.running || pass.running;
      times.set(node, known);
    }
  }
  return times;
}

/** ``0.4 s``, ``12 s``, ``3 min 05 s``, ``1 h 02 min``. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) {
    return '–';
  }
  if (seconds < 10) {
    return `${(Math.round(seconds * 10) / 10).toFixed(1)} s`;
  }
  const whole = Math.round(seconds);
  if (whole < 60) {
    return `${whole} s`;
  }
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) {
    return `${minutes} min ${String(whole % 60).padStart(2, '0')} s`;
  }
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}
