/**
 * One line of the workflows list in plain words (pure, unit tested).
 */
import type { WorkflowSummary } from './types';

export interface SummaryLine {
  notebook: string;
  status: string;
  detail: string;
}

const STATUS_WORDS: Record<string, string> = {
  running: 'Running',
  waiting: 'Waiting for you',
  paused: 'Paused',
  interrupted: 'Interrupted',
  failed: 'Failed',
  completed: 'Completed',
  cancelled: 'Cancelled'
};

/** "just now", "5 min ago", "3 h ago", "2 days ago". */
export function ago(iso: string | null | undefined, now: Date): string {
  if (!iso) {
    return 'no activity yet';
  }
  const seconds = Math.max(0, (now.getTime() - Date.parse(iso)) / 1000);
  if (Number.isNaN(seconds) || seconds < 60) {
    return 'just now';
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)} h ago`;
  }
  const days = Math.floor(seconds / 86400);
  return `${days} day${days === 1 ? '' : 's'} ago`;
}

/** Why a workflow no longer holds its notebook, in words (for its row's detail line). */
const RELEASED_WORDS: Record<string, string> = {
  finished: 'finished; its notebook is free for a new workflow',
  deleted: 'deleted from this list; its record stays',
  replaced: 'replaced by a newer workflow on its notebook; its record stays'
};

/** Deleted or replaced (and no engine drives it here): the Released group, never the list. */
export function isReleased(w: WorkflowSummary): boolean {
  return !w.live && !w.active && (w.released === 'deleted' || w.released === 'replaced');
}

export function summaryLine(w: WorkflowSummary, now: Date): SummaryLine {
  const notebook = w.notebook_path ?? 'notebook deleted';
  let status = STATUS_WORDS[w.run_status] ?? w.run_status;
  if (w.pending > 0) {
    status += ` · ${w.pending} decision${w.pending === 1 ? '' : 's'} to answer`;
  }
  if (w.reason && ['paused', 'failed', 'interrupted'].includes(w.run_status)) {
    status += `: ${w.reason}`;
  }
  const where = w.not_recovered
    ? ` · not recovered by this server: ${w.not_recovered.message}`
    : !w.active && !w.live
      ? ` · ${RELEASED_WORDS[w.released ?? 'finished'] ?? RELEASED_WORDS.finished}`
      : w.live
        ? ''
        : ' · not running in this server';
  return { notebook, status, detail: `last activity ${ago(w.last_activity, now)}${where}` };
}

/**
 * The list's two groups: the workflows a person works with (holding their notebook, driven
 * here, or finished and not yet deleted), and those released: deleted from the list, or
 * replaced by a newer workflow on their notebook. A released workflow's record stays in the
 * store (its trace); it is shown apart, so that a Delete visibly takes the row out of the
 * list a person works with. A finished run was neither: it stays in the list.
 */
export function splitReleased(workflows: readonly WorkflowSummary[]): {
  current: WorkflowSummary[];
  released: WorkflowSummary[];
} {
  return {
    current: workflows.filter(w => !isReleased(w)),
    released: workflows.filter(isReleased)
  };
}

/** The Released group's title: how many, and why, in words. */
export function releasedTitle(released: readonly WorkflowSummary[]): string {
  const deleted = released.filter(w => w.released === 'deleted').length;
  const replaced = released.length - deleted;
  const parts = [
    deleted ? `${deleted} deleted` : '',
    replaced ? `${replaced} replaced by a newer workflow` : ''
  ].filter(Boolean);
  return `Released (${released.length}): ${parts.join(', ')}; their records stay`;
}
