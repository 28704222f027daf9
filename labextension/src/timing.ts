/**
 * Time spent per stage, step and behavior, from the times workflow cells record in their
 * ``metadata.notebook_bcc`` (``created_at`` when written, ``started_at`` / ``ended_at`` when
 * run). The snapshot's FSM history is only a bounded tail and does not name the stage of a
 * transition, so the cells are the complete record.
 *
 * One pass of a node (a stage visit, a behavior iteration) lasts from its first cell's
 * creation to its last cell's end (``now`` while a cell of it runs), less the time its cells
 * waited for a human (``waited_s``: an irreversible action's confirmation); a node's time is
 * the sum of its passes. Pure, unit-tested.
 */
import type { CellMark } from './navigate';

export interface NodeTime {
  /** Seconds, summed over the node's passes. */
  seconds: number;
  /** A cell of this node is running (its time still grows). */
  running: boolean;
}

/** Map keys: ``stage``, ``stage/step``, ``stage/step/behavior``. */
export function timeKey(stage: string, step?: string | null, behavior?: string | null): string {
  return [stage, step, behavior].filter(part => part).join('/');
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
  // pass key -> node key, span
  const passes = new Map<string, { node: string; pass: Pass }>();
  const add = (
    node: string,
    passKey: string,
    start: number,
    end: number,
    running: boolean,
    waited: number
  ): void => {
    const known = passes.get(passKey);
    if (!known) {
      passes.set(passKey, { node, pass: { start, end, running, waited } });
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
    const visit = `#${mark.visit ?? 1}`;
    const iteration = `#${mark.iteration ?? 1}`;
    add(timeKey(mark.stage), `${mark.stage}${visit}`, start, end, running, waited);
    if (mark.step) {
      add(timeKey(mark.stage, mark.step), `${mark.stage}${visit}/${mark.step}`, start, end, running, waited);
      if (mark.behavior) {
        add(
          timeKey(mark.stage, mark.step, mark.behavior),
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
  for (const { node, pass } of passes.values()) {
    const known = times.get(node) ?? { seconds: 0, running: false };
    known.seconds += Math.max(0, pass.end - pass.start - pass.waited) / 1000;
    known.running = known.running || pass.running;
    times.set(node, known);
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
