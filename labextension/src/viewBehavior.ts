/**
 * Pure view logic: the current behavior (criteria, artifacts), the kernel's variables and
 * the latest outputs. Re-exported by ``view.ts``.
 */
import type {
  AcceptanceResult,
  VariableInfo,
  WorkflowSnapshot
} from './types';
import { titleOf } from './viewPlan';

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

/**
 * What a stage confirmation asks a person to review: the outputs of that stage visit's own
 * cells, which the decision carries (``details.outputs``; empty when the stage printed
 * nothing -- never another stage's or an earlier attempt's output). A decision asked before
 * decisions carried them falls back to the run's latest outputs.
 */
export function stageReview(
  details: Record<string, unknown>,
  snapshot: WorkflowSnapshot,
  limit = 3
): EffectView[] {
  const own = details['outputs'];
  if (!Array.isArray(own)) {
    return effectViews(snapshot, limit).filter(e => e.text);
  }
  return own
    .filter((text): text is string => typeof text === 'string' && text.trim() !== '')
    .slice(-limit)
    .map(text => ({ text: text.trimEnd(), error: ERROR_LINE.test(text) }));
}
