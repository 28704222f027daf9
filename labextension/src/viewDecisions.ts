/**
 * Pure view logic: pending decisions (titles, hints, diffs, details) and the controls the
 * FSM allows now. Re-exported by ``view.ts``.
 */
import type {
  FsmTransition,
  PendingDecision,
  PendingKind,
  WorkflowSnapshot
} from './types';
import { STATUS_PHRASES, humanState, isRecord } from './viewPlan';
import { shorten } from './viewBehavior';

// -- pending decisions -------------------------------------------------------------------

export const DECISION_TITLES: Record<PendingKind, string> = {
  workflow_update: 'Workflow update',
  step_update: 'Step update',
  stage_confirmation: 'Stage confirmation',
  irreversible_confirmation: 'Irreversible action',
  in_doubt: 'Action in doubt',
  kernel_rebuild: 'Kernel rebuild',
  budget: 'Planner budget reached',
  lost_state: 'Irreversible state lost'
};

/** What approve / reject mean for each kind, shown on the buttons' tooltips. */
export const DECISION_HINTS: Record<PendingKind, [string, string]> = {
  workflow_update: ['Apply the new plan', 'Keep the current plan'],
  step_update: ['Apply the new steps', 'Keep the current steps'],
  stage_confirmation: ['Continue to the next stage', 'Treat the stage as failed'],
  irreversible_confirmation: ['Run the action', 'Skip the action'],
  in_doubt: ['It never ran: run it now', 'It ran: skip it'],
  kernel_rebuild: ['Replay the recorded cells', 'Continue without them'],
  budget: ['Allow as much again and continue', 'Stop the run (failed)'],
  lost_state: [
    'Re-run the irreversible cell once (its side effect happens again)',
    'Continue without its state'
  ]
};

export interface DiffSection {
  label: 'Added' | 'Removed' | 'Replaced' | 'Moved' | 'Changed';
  items: string[];
}

export interface DiffView {
  level: string;
  sections: DiffSection[];
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** A plan update's diff (D18) as labelled sections; null when the details have none. */
export function diffView(details: Record<string, unknown>): DiffView | null {
  const diff = details['diff'];
  if (!isRecord(diff)) {
    return null;
  }
  const replaced = Array.isArray(diff['replaced'])
    ? diff['replaced'].filter(isRecord).map(r => `${String(r['old'])} → ${String(r['new'])}`)
    : [];
  const sections: DiffSection[] = [
    { label: 'Added', items: strings(diff['added']) },
    { label: 'Removed', items: strings(diff['removed']) },
    { label: 'Replaced', items: replaced },
    { label: 'Moved', items: strings(diff['moved']) },
    { label: 'Changed', items: strings(diff['changed']) }
  ];
  return {
    level: typeof diff['level'] === 'string' ? diff['level'] : 'plan',
    sections: sections.filter(s => s.items.length)
  };
}

const DETAIL_LABELS: Record<string, string> = {
  stage: 'Stage',
  resume_state: 'Resumes in',
  path: 'Action',
  cell_id: 'Cell',
  reason: 'Why',
  earlier_run: 'Ran before',
  contract_id: 'Contract',
  cells: 'Cells',
  skipped: 'Skipped'
};

const HIDDEN_DETAILS = new Set(['diff', 'proposal', 'code', 'contract_id', 'outputs']);

/** A value as one readable line: lists joined, objects as ``key: value`` pairs. */
export function readable(value: unknown, width = 80): string {
  if (value === null || value === undefined) {
    return '—';
  }
  if (typeof value === 'boolean') {
    return value ? 'yes' : 'no';
  }
  if (Array.isArray(value)) {
    return shorten(value.map(v => readable(v, width)).join(', '), width);
  }
  if (isRecord(value)) {
    return shorten(
      Object.entries(value)
        .map(([k, v]) => `${k}: ${readable(v, width)}`)
        .join('; '),
      width
    );
  }
  return shorten(String(value), width);
}

/**
 * Why an action counts as irreversible, in words: ``planner`` means the plan flagged it -- a
 * blueprint's author when the planner is a blueprint -- anything else names the rule it matched.
 */
export function irreversibleWhy(reason: unknown, plannerKind?: string): string {
  if (reason === 'planner') {
    return plannerKind === 'blueprint'
      ? 'marked irreversible in the blueprint'
      : 'marked irreversible by the planner';
  }
  return `matches the pattern ${readable(reason)}`;
}

/**
 * A decision's details as label / value rows, without the parts shown on their own.
 * ``plannerKind`` (the snapshot's) words the "Why" of an irreversible action.
 */
export function detailRows(decision: PendingDecision, plannerKind?: string): Array<[string, string]> {
  const details = decision.details;
  return Object.entries(details)
    .filter(([key]) => !HIDDEN_DETAILS.has(key))
    // a stage confirmation resuming in its own stage says nothing the Stage row does not
    .filter(([key, value]) => !(key === 'resume_state' && value === details['stage']))
    .map(([key, value]) => [
      DETAIL_LABELS[key] ?? humanState(key),
      key === 'reason' && decision.kind === 'irreversible_confirmation'
        ? irreversibleWhy(value, plannerKind)
        : readable(value)
    ]);
}

/** The code an irreversible / in-doubt decision is about, if any. */
export function decisionCode(decision: PendingDecision): string | null {
  const code = decision.details['code'];
  return typeof code === 'string' && code.trim() ? code : null;
}

// -- controls ----------------------------------------------------------------------------

export type ControlId = 'run' | 'pause' | 'cancel' | 'reset' | 'restart' | 'retry';

export interface ControlView {
  id: ControlId;
  label: string;
  enabled: boolean;
  /** Why the control is disabled, or what it does. */
  title: string;
  destructive: boolean;
}

/** The FSM event a control sends, when it is an event command (D3). */
export const CONTROL_EVENTS: Partial<Record<ControlId, string>> = {
  cancel: 'CANCEL',
  reset: 'RESET'
};

function allows(transitions: FsmTransition[], state: string, event: string): boolean {
  return transitions.some(t => t.from === state && t.event === event);
}

/**
 * Which controls apply now: run / pause follow the run status (D1), cancel / reset the FSM
 * table, retry / start over a failed run (or one in ``error``).
 */
export function controlViews(
  snapshot: WorkflowSnapshot,
  transitions: FsmTransition[]
): ControlView[] {
  const status = snapshot.run.status;
  const state = snapshot.fsm.state;
  const pending = snapshot.run.pending.length > 0;
  const eventControl = (
    id: ControlId,
    label: string,
    what: string,
    destructive = false
  ): ControlView => {
    const event = CONTROL_EVENTS[id] as string;
    const legal = allows(transitions, state, event);
    return {
      id,
      label,
      enabled: legal,
      title: legal ? what : `${label}: not possible in the workflow's state (${plainState})`,
      destructive
    };
  };
  // Retry and Start over are the run's way out of a failure (D1): offered on a failed run
  // (a blueprint failure end state leaves the FSM in stage_completed) and in error; the
  // server picks the transition the table allows (``{"action": "retry" | "restart"}``).
  const plainState = state === 'workflow_completed' ? 'completed' : humanState(state);
  const failed =
    transitions.length > 0 &&
    (status === 'failed' || state === 'error') &&
    state !== 'workflow_completed' &&
    state !== 'cancelled';
  const recoveryControl = (id: ControlId, label: string, what: string): ControlView => ({
    id,
    label,
    enabled: failed,
    title: failed
      ? what
      : `${label}: only after a failure (the run ${STATUS_PHRASES[status]})`,
    destructive: false
  });
  const canRun = status === 'paused' || status === 'interrupted';
  return [
    {
      id: 'run',
      label: status === 'interrupted' ? 'Resume' : 'Run',
      enabled: canRun,
      title: canRun
        ? 'Continue the run'
        : pending
          ? 'Answer the pending decisions to continue'
          : `Nothing to continue: the run ${STATUS_PHRASES[status]}`,
      destructive: false
    },
    {
      id: 'pause',
      label: 'Pause',
      enabled: status === 'running',
      title:
        status === 'running'
          ? 'Pause now, or after the running cell (a question to the planner is dropped)'
          : `Only a running workflow pauses (it ${STATUS_PHRASES[status]})`,
      destructive: false
    },
    eventControl('cancel', 'Cancel', 'Cancel the workflow (asks first)', true),
    eventControl('reset', 'Reset', 'Reset the workflow to idle (asks first)', true),
    recoveryControl(
      'restart',
      'Start over',
      'A new run from the first stage in a restarted kernel; this one stays in the record'
    ),
    recoveryControl(
      'retry',
      'Retry from the failure',
      'Run the failed behavior (or the failing stage) again; the rest of the run is kept'
    )
  ];
}
