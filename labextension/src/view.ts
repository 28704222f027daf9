/**
 * Pure view logic of the Workflow panel: snapshot -> what to show.
 *
 * Everything here is a plain function of the snapshot (and, for the controls, the FSM
 * table), so it is unit-tested under node without a browser or JupyterLab. The widget only
 * turns these view models into DOM.
 */
import type {
  AcceptanceResult,
  CompletionStatus,
  FsmTransition,
  Metrics,
  PendingDecision,
  PendingKind,
  PlanItem,
  RunStatus,
  UsageTotals,
  VariableInfo,
  WorkflowEvent,
  WorkflowSnapshot
} from './types';

// -- run status badge --------------------------------------------------------------------

/** Label and explanation of each run status (D1) for the header badge. */
export const STATUS_LABELS: Record<RunStatus, string> = {
  running: 'Running',
  paused: 'Paused',
  waiting: 'Waiting for you',
  interrupted: 'Interrupted',
  failed: 'Failed',
  completed: 'Completed',
  cancelled: 'Cancelled'
};

/** "behavior_running" -> "behavior running": FSM state names read as words. */
export function humanState(state: string): string {
  return state.replace(/_/g, ' ').toLowerCase();
}

// -- the stage -> step -> behavior tree --------------------------------------------------

export type NodeStatus = 'completed' | 'current' | 'remaining';

/** One node of the plan tree (a stage, a step or a behavior). */
export interface TreeNode {
  id: string;
  title: string;
  status: NodeStatus;
  completion: CompletionStatus | null;
  /** Behavior iteration (behaviors and steps), or the visit count of a re-entered stage. */
  iteration: number | null;
  goal: string | null;
  focus: string | null;
  pcs: Array<[string, string]>;
  children: TreeNode[];
}

/** "build_features" -> "Build features": a readable stand-in when a plan item has no title. */
export function humanizeId(id: string): string {
  const words = id.replace(/[_-]+/g, ' ').trim();
  return words ? words[0].toUpperCase() + words.slice(1) : id;
}

function titleOf(item: PlanItem, known?: ReadonlyMap<string, string>): string {
  return item.title?.trim() || known?.get(item.id) || humanizeId(item.id);
}

function pcsRows(item: PlanItem): Array<[string, string]> {
  const pcs = item.pcs_considerations;
  if (!pcs) {
    return [];
  }
  const rows: Array<[string, string]> = [];
  for (const key of ['predictability', 'computability', 'stability'] as const) {
    const value = pcs[key];
    if (value) {
      rows.push([key[0].toUpperCase() + key.slice(1), value]);
    }
  }
  return rows;
}

function node(
  item: PlanItem,
  status: NodeStatus,
  children: TreeNode[] = [],
  iteration: number | null = null,
  known?: ReadonlyMap<string, string>
): TreeNode {
  return {
    id: item.id,
    title: titleOf(item, known),
    status,
    completion: status === 'completed' ? (item.completion_status ?? null) : null,
    iteration: iteration ?? item.iteration ?? null,
    goal: item.goal ?? null,
    focus: item.focus ?? null,
    pcs: pcsRows(item),
    children
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Steps a stage carries in ``extra``: planned ``steps`` or, once done, ``step_results``. */
function stepsFromExtra(
  stage: PlanItem,
  status: NodeStatus,
  known?: ReadonlyMap<string, string>
): TreeNode[] {
  const extra = stage.extra ?? {};
  const raw = Array.isArray(extra['step_results'])
    ? extra['step_results']
    : Array.isArray(extra['steps'])
      ? extra['steps']
      : [];
  const steps: TreeNode[] = [];
  for (const entry of raw) {
    if (isRecord(entry) && typeof entry['id'] === 'string') {
      steps.push(node(entry as unknown as PlanItem, status, [], null, known));
    }
  }
  return steps;
}

/**
 * The plan as a tree: completed stages (in the order they ran, a re-entered stage once per
 * visit), the current stage with its steps and the current step's behaviors, then the
 * remaining stages with the steps planned for them. A completed stage's steps are recorded
 * by id only: their titles come from ``knownTitles`` (id -> title, e.g. seen earlier by the
 * panel), else the id made readable.
 */
export function buildTree(
  snapshot: WorkflowSnapshot,
  knownTitles?: ReadonlyMap<string, string>
): TreeNode[] {
  const { stages, steps, behaviors } = snapshot.location.progress;
  const current = snapshot.location.current;
  const tree: TreeNode[] = [];
  for (const stage of stages.completed) {
    const visits = stage.visits ?? 0;
    tree.push(
      node(
        stage,
        'completed',
        stepsFromExtra(stage, 'completed', knownTitles),
        visits > 1 ? visits : null
      )
    );
  }
  if (stages.current) {
    const stepNodes: TreeNode[] = steps.completed.map(step => node(step, 'completed'));
    if (steps.current) {
      const behaviorNodes: TreeNode[] = [
        ...behaviors.completed.map(b => node(b, 'completed')),
        ...(behaviors.current
          ? [
              node(
                behaviors.current,
                'current',
                [],
                current.behavior_iteration || behaviors.iteration || null
              )
            ]
          : []),
        ...behaviors.remaining.map(b => node(b, 'remaining'))
      ];
      stepNodes.push(node(steps.current, 'current', behaviorNodes));
    }
    stepNodes.push(...steps.remaining.map(step => node(step, 'remaining')));
    const visits = stages.current.visits ?? 0;
    tree.push(node(stages.current, 'current', stepNodes, visits > 1 ? visits : null));
  }
  for (const stage of stages.remaining) {
    tree.push(node(stage, 'remaining', stepsFromExtra(stage, 'remaining')));
  }
  return tree;
}

// -- progress and metrics ----------------------------------------------------------------

/** Stages and steps done / total, for the progress line. */
export interface ProgressSummary {
  stagesDone: number;
  stagesTotal: number;
  stepsDone: number;
  stepsTotal: number;
  currentStage: string | null;
}

/**
 * Distinct stages: a stage counts as done once completed and not due to run again, so a loop
 * back to an earlier stage (feature engineering after modelling) lowers the count honestly.
 */
export function progressSummary(snapshot: WorkflowSnapshot): ProgressSummary {
  const { stages, steps } = snapshot.location.progress;
  const ahead = new Set([
    ...(stages.current ? [stages.current.id] : []),
    ...stages.remaining.map(s => s.id)
  ]);
  const done = new Set(stages.completed.map(s => s.id).filter(id => !ahead.has(id)));
  const planned = new Set([...stages.completed.map(s => s.id), ...ahead]);
  return {
    stagesDone: done.size,
    stagesTotal: planned.size,
    stepsDone: steps.completed.length,
    stepsTotal:
      steps.completed.length + (steps.current ? 1 : 0) + steps.remaining.length,
    currentStage: stages.current ? titleOf(stages.current) : null
  };
}

/** 0.8333 -> "83 %"; null -> "—". */
export function percent(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) {
    return '—';
  }
  return `${Math.round(value * 100)} %`;
}

/** The seed 000 metrics (D20) as label / value rows; undefined ratios show a dash. */
export function metricRows(metrics: Metrics): Array<[string, string]> {
  const rows: Array<[string, string]> = [
    ['Overall progress', percent(metrics.overall_progress)],
    ['Stage progress', percent(metrics.stage_progress)],
    ['Artifacts produced', percent(metrics.artifact_completion)],
    ['Acceptance passed', percent(metrics.acceptance_pass_rate)],
    ['Retry rate', percent(metrics.retry_rate)],
    ['Variable coverage', percent(metrics.variable_coverage)]
  ];
  const pcs = metrics.pcs ?? {};
  const flag = (value: boolean | null | undefined): string =>
    value === true ? 'yes' : value === false ? 'no' : '—';
  rows.push(['PCS: seeds set', flag(pcs.seeds_set)]);
  rows.push(['PCS: library versions', flag(pcs.library_versions_recorded)]);
  rows.push(['PCS: held-out split', flag(pcs.holdout_split)]);
  return rows;
}

// -- the current behavior ----------------------------------------------------------------

export type CriterionResult = 'pass' | 'fail' | 'error' | 'pending';

export interface CriterionView {
  expression: string;
  result: CriterionResult;
  message: string | null;
}

export interface ArtifactView {
  name: string;
  description: string | null;
  present: boolean;
}

/** The behavior the panel details: the running one, else the last one of the step. */
export interface BehaviorView {
  id: string;
  title: string;
  running: boolean;
  iteration: number | null;
  agent: string | null;
  task: string | null;
  inputs: Array<[string, string]>;
  artifacts: ArtifactView[];
  criteria: CriterionView[];
}

const RESULT: Record<AcceptanceResult['status'], CriterionResult> = {
  passed: 'pass',
  failed: 'fail',
  error: 'error'
};

/** Acceptance criteria of ``owner`` with the kernel's verdicts (``pending`` until run). */
export function criteria(
  snapshot: WorkflowSnapshot,
  owner: string,
  expressions: string[]
): CriterionView[] {
  const results = snapshot.acceptance[owner] ?? {};
  return expressions.map(expression => {
    const result = results[expression];
    return {
      expression,
      result: result ? RESULT[result.status] : 'pending',
      message: result?.message ?? null
    };
  });
}

export function behaviorView(snapshot: WorkflowSnapshot): BehaviorView | null {
  const behaviors = snapshot.location.progress.behaviors;
  const running = behaviors.current !== null && behaviors.current !== undefined;
  const item =
    behaviors.current ?? behaviors.completed[behaviors.completed.length - 1] ?? null;
  if (!item) {
    return null;
  }
  const outputs = behaviors.current_outputs ?? { expected: [], produced: [], in_progress: [] };
  const produced = new Set([...(item.artifacts_produced ?? []), ...(running ? outputs.produced : [])]);
  const names = new Map<string, string | null>();
  for (const [name, description] of Object.entries(item.outputs ?? {})) {
    names.set(name, description || null);
  }
  for (const name of running ? outputs.expected : []) {
    if (!names.has(name)) {
      names.set(name, null);
    }
  }
  const artifacts: ArtifactView[] = [...names].map(([name, description]) => ({
    name,
    description,
    present: produced.has(name) || name in snapshot.variables
  }));
  return {
    id: item.id,
    title: titleOf(item),
    running,
    iteration: running
      ? snapshot.location.current.behavior_iteration || item.iteration || null
      : (item.iteration ?? null),
    agent: item.agent ?? null,
    task: item.task ?? null,
    inputs: Object.entries(item.inputs ?? {}),
    artifacts,
    criteria: criteria(snapshot, item.id, item.acceptance ?? [])
  };
}

// -- variables ---------------------------------------------------------------------------

export interface VariableRow {
  name: string;
  type: string;
  shape: string;
  value: string;
}

const SCALAR_TYPES = new Set(['int', 'float', 'bool', 'str', 'NoneType', 'complex']);

/** One row per variable, sorted by name; values only for scalars (D13), shortened. */
export function variableRows(variables: Record<string, VariableInfo>, width = 60): VariableRow[] {
  return Object.keys(variables)
    .sort((a, b) => a.localeCompare(b))
    .map(name => {
      const info = variables[name];
      let shape = '';
      if (info.shape && info.shape.length) {
        shape = info.shape.join(' × ');
      } else if (info.length !== null && info.length !== undefined) {
        shape = `len ${info.length}`;
      }
      let value = '';
      if (typeof info.value === 'number' && !Number.isInteger(info.value)) {
        // six significant digits read at a glance; the full value is one click away (kernel)
        value = String(Number(info.value.toPrecision(6)));
      } else if (info.value !== null && info.value !== undefined && typeof info.value !== 'object') {
        value = String(info.value);
      } else if (SCALAR_TYPES.has(info.type) && info.repr) {
        value = info.repr;
      }
      return { name, type: info.type, shape, value: shorten(value, width) };
    });
}

/** Kernel names that are code rather than data (functions, classes, modules). */
const CODE_TYPES = new Set([
  'function',
  'builtin_function_or_method',
  'method',
  'module',
  'type',
  'ABCMeta',
  'EnumMeta',
  'EnumType'
]);

/** The data variables (what the table shows) and how many code objects were left out. */
export function dataVariables(variables: Record<string, VariableInfo>): {
  data: Record<string, VariableInfo>;
  hidden: number;
} {
  const data: Record<string, VariableInfo> = {};
  let hidden = 0;
  for (const [name, info] of Object.entries(variables)) {
    if (CODE_TYPES.has(info.type)) {
      hidden += 1;
    } else {
      data[name] = info;
    }
  }
  return { data, hidden };
}

/** ``text`` cut to ``width`` characters with an ellipsis. */
export function shorten(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
}

// -- effects -----------------------------------------------------------------------------

export interface EffectView {
  text: string;
  error: boolean;
}

// The kernel's error outputs (D12) start "ename: evalue" -- "ValueError: …", "Exception: boom",
// "Error: …" (csv.Error), "KeyboardInterrupt", "SystemExit: 1" -- or with a "Traceback" line;
// an ordinary line such as "Error rate: 0.1" is not one.
const ERROR_LINE =
  /^(?:(?:[A-Z][A-Za-z0-9_]*)?(?:Error|Exception|Interrupt|SystemExit)(?::|\s*$)|Traceback\b)/m;

/** The latest outputs (D12), newest last; an error output is flagged for highlighting. */
export function effectViews(snapshot: WorkflowSnapshot, limit = 6): EffectView[] {
  const current = snapshot.effects.current;
  const source = current.length ? current : snapshot.effects.history;
  return source.slice(-limit).map(text => ({ text: text.trimEnd(), error: ERROR_LINE.test(text) }));
}

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
  lost_state: ['Re-run the irreversible cell once (its side effect happens again)', 'Continue without its state']
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

const HIDDEN_DETAILS = new Set(['diff', 'proposal', 'code', 'contract_id']);

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

/** A decision's details as label / value rows, without the parts shown on their own. */
export function detailRows(decision: PendingDecision): Array<[string, string]> {
  const details = decision.details;
  return Object.entries(details)
    .filter(([key]) => !HIDDEN_DETAILS.has(key))
    // a stage confirmation resuming in its own stage says nothing the Stage row does not
    .filter(([key, value]) => !(key === 'resume_state' && value === details['stage']))
    .map(([key, value]) => [DETAIL_LABELS[key] ?? humanState(key), readable(value)]);
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
      title: legal ? what : `${label}: not possible while the workflow is ${plainState}`,
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
      : `${label}: only after a failure (the run is ${STATUS_LABELS[status].toLowerCase()})`,
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
          : `The run is ${STATUS_LABELS[status].toLowerCase()}`,
      destructive: false
    },
    {
      id: 'pause',
      label: 'Pause',
      enabled: status === 'running',
      title:
        status === 'running'
          ? 'Pause after the running cell'
          : `Only a running workflow pauses (it is ${STATUS_LABELS[status].toLowerCase()})`,
      destructive: false
    },
    eventControl('cancel', 'Cancel', 'Cancel the workflow (asks first)', true),
    eventControl('reset', 'Reset', 'Reset the workflow to idle (asks first)', true),
    recoveryControl(
      'restart',
      'Start over',
      'A new run from the first stage; this one stays in the record'
    ),
    recoveryControl(
      'retry',
      'Retry from the failure',
      'Run the failed behavior (or the failing stage) again; the rest of the run is kept'
    )
  ];
}

// -- timeline ----------------------------------------------------------------------------

export const TIMELINE_LIMIT = 200;

/** Adds events to a timeline (oldest first), dropping duplicates and the oldest overflow. */
export function mergeEvents(
  timeline: WorkflowEvent[],
  incoming: WorkflowEvent[],
  limit = TIMELINE_LIMIT
): WorkflowEvent[] {
  const seen = new Set(timeline.map(e => e.seq));
  const merged = [...timeline];
  for (const event of incoming) {
    if (!seen.has(event.seq)) {
      seen.add(event.seq);
      merged.push(event);
    }
  }
  merged.sort((a, b) => a.seq - b.seq);
  return merged.slice(-limit);
}

/** One readable line per D4 event. */
export function eventText(event: WorkflowEvent): string {
  const detail = event.detail ?? {};
  switch (event.kind) {
    case 'transition':
      return `${humanState(event.from ?? '?')} → ${humanState(event.to ?? '?')} (${event.event ?? ''})`;
    case 'run': {
      const reason = typeof detail['reason'] === 'string' ? `: ${detail['reason']}` : '';
      return `run ${event.from ?? '?'} → ${event.to ?? event.run_status}${reason}`;
    }
    case 'cell': {
      const type = typeof detail['cell_type'] === 'string' ? `${detail['cell_type']} ` : '';
      const position = typeof detail['position'] === 'number' ? ` #${detail['position'] + 1}` : '';
      return `${type}cell written${position}`;
    }
    case 'decision': {
      const kind = typeof detail['kind'] === 'string' ? detail['kind'] : 'decision';
      const title = DECISION_TITLES[kind as PendingKind] ?? humanState(kind);
      return `${title} ${event.event ?? ''}`.trim();
    }
    case 'contract': {
      const action = typeof detail['action'] === 'string' ? detail['action'] : '';
      return `contract ${event.event ?? ''} ${action.replace(/^[a-z_]+:/, '')}`.trim();
    }
    default:
      return String(event.kind);
  }
}

/** ``2026-11-22T03:32:53.38Z`` -> ``03:32:53`` (UTC). */
export function clock(at: string): string {
  const match = /T(\d\d:\d\d:\d\d)/.exec(at);
  return match ? match[1] : at;
}

/** Transitions of the snapshot's history tail as events (before the stream delivered any). */
export function historyEvents(snapshot: WorkflowSnapshot): WorkflowEvent[] {
  return snapshot.fsm.history.map((entry, index) => ({
    workflow_id: snapshot.workflow_id,
    seq: -snapshot.fsm.history.length + index,
    version: snapshot.version,
    at: entry.timestamp,
    kind: 'transition' as const,
    from: entry.from,
    event: entry.event,
    to: entry.to,
    actor: entry.actor,
    run_status: snapshot.run.status,
    detail: {}
  }));
}

// -- usage -------------------------------------------------------------------------------

export interface UsageRow {
  scope: string;
  calls: number;
  tokens: string;
  latency: string;
}

function usageRow(scope: string, totals: UsageTotals): UsageRow {
  const tokens = totals.prompt_tokens + totals.completion_tokens;
  return {
    scope,
    calls: totals.calls,
    tokens: tokens ? `${totals.prompt_tokens} + ${totals.completion_tokens}` : '—',
    latency:
      // 999.6 ms rounds to a second, so it reads "1.0 s", not "1000 ms"
      Math.round(totals.latency_ms) >= 1000
        ? `${(totals.latency_ms / 1000).toFixed(1)} s`
        : `${Math.round(totals.latency_ms)} ms`
  };
}

/** Planner usage in total and per stage; empty when the planner was never called. */
export function usageRows(snapshot: WorkflowSnapshot): UsageRow[] {
  const usage = snapshot.usage;
  if (!usage || !usage.calls) {
    return [];
  }
  const rows = [usageRow('Total', usage)];
  for (const [stage, totals] of Object.entries(usage.per_stage ?? {})) {
    rows.push(usageRow(stage === '_workflow' ? 'Planning' : stage, totals));
  }
  return rows;
}

// -- live connection ---------------------------------------------------------------------

/** Reconnect delay after ``attempt`` failures: exponential, capped, with jitter in [0, 1). */
export function backoffDelay(attempt: number, jitter: number, base = 500, cap = 15000): number {
  const exp = Math.min(cap, base * 2 ** Math.max(0, attempt));
  return Math.round(exp / 2 + (exp / 2) * Math.min(Math.max(jitter, 0), 1));
}

/** Whether a run status means the engine may still change the snapshot by itself. */
export function isActive(status: RunStatus): boolean {
  return status === 'running';
}

// -- diagrams ----------------------------------------------------------------------------

/**
 * The drawing size of an SVG given as a ``data:image/svg+xml`` URL (its viewBox, else its
 * width/height in px), or null. Mermaid sizes its SVG to "100%", which as an image falls back
 * to 300 px wide: the full-size view uses this instead.
 */
export function svgNaturalSize(src: string): { width: number; height: number } | null {
  const comma = src.indexOf(',');
  if (!src.startsWith('data:image/svg+xml') || comma < 0) {
    return null;
  }
  const head = src.slice(0, comma);
  let text: string;
  try {
    text = head.endsWith(';base64') ? atob(src.slice(comma + 1)) : decodeURIComponent(src.slice(comma + 1));
  } catch {
    return null;
  }
  const tag = /<svg\b[^>]*>/i.exec(text)?.[0];
  if (!tag) {
    return null;
  }
  const box = /\bviewBox\s*=\s*["']\s*[-\d.eE]+[\s,]+[-\d.eE]+[\s,]+([\d.eE]+)[\s,]+([\d.eE]+)\s*["']/.exec(tag);
  if (box) {
    const size = { width: Number(box[1]), height: Number(box[2]) };
    if (size.width > 0 && size.height > 0) {
      return size;
    }
  }
  const width = /\bwidth\s*=\s*["']([\d.]+)(px)?["']/.exec(tag);
  const height = /\bheight\s*=\s*["']([\d.]+)(px)?["']/.exec(tag);
  if (width && height) {
    return { width: Number(width[1]), height: Number(height[1]) };
  }
  return null;
}
