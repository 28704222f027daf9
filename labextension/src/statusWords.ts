/**
 * The panel's status line in plain words (pure, unit tested): what the run does or needs,
 * not the FSM's state name (that goes to a details line).
 */
import type { PendingKind, WorkflowSnapshot } from './types';
import { humanState, humanizeId } from './view';

const ASK: Record<PendingKind, string> = {
  stage_confirmation: 'Waiting for your approval',
  irreversible_confirmation: 'Waiting for your approval of an irreversible action',
  workflow_update: 'Waiting for you to accept a plan change',
  step_update: 'Waiting for you to accept a step change',
  in_doubt: 'Waiting for you: a cell may or may not have run',
  kernel_rebuild: 'Waiting for you: the kernel could not be restored',
  budget: 'Waiting for you: the planner budget is used up',
  lost_state: 'Waiting for you: an irreversible cell\'s state was lost with the kernel'
};

/** The current stage by its title (as the plan tree shows it), else its id in words. */
function stageName(snapshot: WorkflowSnapshot): string | null {
  const stage = snapshot.location.current.stage_id;
  if (!stage) {
    return null;
  }
  const current = snapshot.location.progress?.stages.current;
  const title = current && current.id === stage ? current.title?.trim() : '';
  return title || humanizeId(stage);
}

// "stage tuning failed: in tuning / tune / fit: ValueError: bad (line 4 of cell c-1); the
// workflow ended in end state 'failed'" -> "ValueError: bad": the error a user fixes.
const ERROR_IN_REASON =
  /\b([A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit)): (.+?)(?: \(line \d+ of cell [^)]*\))?(?:;|$)/;

/** The error of a failure reason in its own words, else the whole reason. */
export function failureWords(reason: string): string {
  const found = ERROR_IN_REASON.exec(reason);
  return found ? `${found[1]}: ${found[2].trim()}` : reason;
}

/** "Waiting for your approval: Review …", "Failed in Modelling: …", "Running Modelling". */
export function statusSentence(snapshot: WorkflowSnapshot, drivenHere = true): string {
  const run = snapshot.run;
  const stage = stageName(snapshot);
  const reason = run.reason ?? '';
  switch (run.status) {
    case 'waiting': {
      const first = run.pending[0];
      if (!first) {
        return 'Waiting for you';
      }
      const more = run.pending.length > 1 ? ` (+${run.pending.length - 1} more)` : '';
      return `${ASK[first.kind] ?? 'Waiting for you'}: ${first.message}${more}`;
    }
    case 'failed': {
      const why = failureWords(reason);
      return `Failed${stage ? ` in ${stage}` : ''}${why ? `: ${why}` : ''}`;
    }
    case 'running':
      return stage ? `Running ${stage}` : 'Running';
    case 'paused':
      return `Paused${reason ? `: ${reason}` : ''}`;
    case 'interrupted':
      return `Interrupted${reason ? `: ${reason}` : ''}${drivenHere ? '; Run resumes it' : ''}`;
    case 'completed':
      return 'Completed';
    case 'cancelled':
      return 'Cancelled';
    default:
      return String(run.status);
  }
}

/** The details line: the FSM state for those who want it. A failed or cancelled run stays
 *  in the state it was in then ("stage completed" under "Failed in Modelling" read as if the
 *  stage had gone well): the line says the state is where it stopped. */
export function stateDetail(snapshot: WorkflowSnapshot): string {
  const state = humanState(snapshot.fsm.state);
  switch (snapshot.run.status) {
    case 'failed':
      return `Workflow state when it failed: ${state}`;
    case 'cancelled':
      return `Workflow state when it was cancelled: ${state}`;
    default:
      return `Workflow state: ${state}`;
  }
}
