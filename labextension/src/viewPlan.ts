/**
 * Pure view logic: the run status badge, the stage -> step -> behavior tree, progress and
 * metrics. Re-exported by ``view.ts``.
 */
import type {
  CompletionStatus,
  Metrics,
  PlanItem,
  RunStatus,
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

/** A run status as the end of a sentence about the run ("the run has failed"). */
export const STATUS_PHRASES: Record<RunStatus, string> = {
  running: 'is running',
  paused: 'is paused',
  waiting: 'is waiting for you',
  interrupted: 'was interrupted',
  failed: 'has failed',
  completed: 'has completed',
  cancelled: 'was cancelled'
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

/**
 * ``text`` cut after each ``_ . / -`` that has more of the name after it: where an identifier
 * or a path may wrap in a narrow panel (``user_submit_files`` -> ``user_`` ``submit_``
 * ``files``), so it wraps between its parts rather than inside a word.
 */
export function idParts(text: string): string[] {
  return text.split(/(?<=[^_./-][_./-]+)(?=[^_./-])/);
}

/** A plan item's title, else a known title for its id, else its id in words. */
export function titleOf(item: PlanItem, known?: ReadonlyMap<string, string>): string {
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

/** Whether ``value`` is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
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
