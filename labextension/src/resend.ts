/**
 * Commands whose meaning does not depend on what the sender saw (pause, cancel: "stop
 * whatever you are doing") against a workflow that keeps moving: a 409 carries the fresh
 * snapshot, and the command is sent again against it while it still applies. The workflow
 * may commit twice between a 409 and the resend (a cell's end, then the next cell's start),
 * so one resend is not enough; a bounded few are.
 */
import { ApiError, type BccApi } from './api';
import { canonical } from './threeWay';
import type { Command, PendingDecision, WorkflowSnapshot } from './types';

/** Resends after a 409 before the conflict is the answer (each follows a fresh commit). */
export const MAX_RESENDS = 5;

/** Given the fresh snapshot of a 409: the command to send again, or null when it no longer
 * applies (the workflow ended meanwhile). */
export type StillMeant = (fresh: WorkflowSnapshot) => Command | null;

/**
 * POST ``command``; on a 409 with a snapshot, send ``stillMeant(snapshot)`` instead, at most
 * :data:`MAX_RESENDS` times. Anything else (and the last 409) is thrown as it came.
 */
export async function sendWhileMeant(
  api: Pick<BccApi, 'command'>,
  workflowId: string,
  command: Command,
  stillMeant?: StillMeant
): Promise<WorkflowSnapshot> {
  let next = command;
  for (let resends = 0; ; resends++) {
    try {
      return await api.command(workflowId, next);
    } catch (error) {
      const fresh = error instanceof ApiError && error.status === 409 ? error.snapshot : null;
      const again = fresh && stillMeant && resends < MAX_RESENDS ? stillMeant(fresh) : null;
      if (!again) {
        throw error;
      }
      next = again;
    }
  }
}

/**
 * An answer to a pending decision means the same while that very question is still open:
 * the workflow may have moved meanwhile without touching it (a rename of its notebook
 * followed, a heartbeat of the run's record). Sent again while the fresh snapshot still
 * holds the same decision (id, kind, message, details and time); a decision answered,
 * dropped or replaced meanwhile is not answered blind: the 409 is the answer.
 */
export function whileStillAsked(
  shown: PendingDecision,
  decision: 'approve' | 'reject'
): StillMeant {
  const asked = canonical(shown);
  return fresh =>
    fresh.run.pending.some(p => canonical(p) === asked)
      ? { decide: shown.id, decision, expected_version: fresh.version }
      : null;
}
