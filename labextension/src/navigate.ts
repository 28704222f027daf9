/**
 * Which notebook cells belong to a plan node, a behavior or a contract, which cell to follow
 * while a workflow runs, and the badge a workflow cell carries.
 *
 * Every cell a workflow writes carries ``metadata.notebook_bcc`` (see
 * ``notebook_bcc/kernel/cells.py``): ``stage_id``, ``visit``, ``step_id``, ``behavior_id``,
 * ``iteration``, ``contract_id``, ``status`` and its times. Pure: the JupyterLab side
 * (``navigateUi.ts``) reads the metadata and moves the notebook.
 */

/** What the panel knows of one workflow cell, read from its ``metadata.notebook_bcc``. */
export interface CellMark {
  /** Position of the cell in the notebook. */
  index: number;
  stage: string | null;
  visit: number | null;
  step: string | null;
  behavior: string | null;
  iteration: number | null;
  contract: string | null;
  status: string | null;
  createdAt: string | null;
  startedAt: string | null;
  endedAt: string | null;
  /** Seconds the cell waited for a human before it ran (an irreversible action's
   *  confirmation): not counted as time spent. */
  waitedS?: number | null;
  /** The workflow that wrote the cell (a notebook keeps the cells of its earlier runs). */
  workflow?: string | null;
}

/** What to show: any of stage / step / behavior (narrowing), or one contract. */
export interface NavTarget {
  stage?: string | null;
  /** One visit of a re-entered stage (its cells only, not those of its other visits). */
  visit?: number | null;
  step?: string | null;
  behavior?: string | null;
  contract?: string | null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value ? value : null;
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** The mark of the cell at ``index`` from its ``notebook_bcc`` metadata, or null (not ours). */
export function cellMark(index: number, bcc: unknown): CellMark | null {
  if (!bcc || typeof bcc !== 'object' || Array.isArray(bcc)) {
    return null;
  }
  const m = bcc as Record<string, unknown>;
  return {
    index,
    stage: text(m['stage_id']),
    visit: count(m['visit']),
    step: text(m['step_id']),
    behavior: text(m['behavior_id']),
    iteration: count(m['iteration']),
    contract: text(m['contract_id']),
    status: text(m['status']),
    createdAt: text(m['created_at']),
    startedAt: text(m['started_at']),
    endedAt: text(m['ended_at']),
    waitedS: count(m['waited_s']),
    workflow: text(m['workflow_id'])
  };
}

/** The marks of ``workflowId``'s own cells: an earlier workflow's cells in the same notebook
 *  share its stage ids, and counting them made a re-run's stages last minutes. A mark that
 *  names no workflow is kept; no ``workflowId`` keeps them all. */
export function ofWorkflow(marks: readonly CellMark[], workflowId: string | null): CellMark[] {
  return marks.filter(mark => !workflowId || !mark.workflow || mark.workflow === workflowId);
}

/** Indices (ascending) of the cells ``target`` names; empty when it names nothing. */
export function matchingCells(marks: readonly CellMark[], target: NavTarget): number[] {
  const wanted: Array<[keyof CellMark, string]> = [];
  if (target.contract) {
    wanted.push(['contract', target.contract]);
  } else {
    if (target.stage) {
      wanted.push(['stage', target.stage]);
    }
    if (target.step) {
      wanted.push(['step', target.step]);
    }
    if (target.behavior) {
      wanted.push(['behavior', target.behavior]);
    }
  }
  if (!wanted.length) {
    return [];
  }
  const visit = target.contract ? null : target.visit ?? null;
  return marks
    .filter(mark => wanted.every(([key, value]) => mark[key] === value))
    .filter(mark => visit === null || (mark.visit ?? 1) === visit)
    .map(mark => mark.index)
    .sort((a, b) => a - b);
}

/**
 * The cell to keep in view while following: the running one (the last, if several claim to
 * run), else the workflow cell written last (by creation time, then position); null when the
 * notebook has no workflow cell.
 */
export function followIndex(marks: readonly CellMark[]): number | null {
  const running = marks.filter(mark => mark.status === 'running');
  if (running.length) {
    return Math.max(...running.map(mark => mark.index));
  }
  let best: CellMark | null = null;
  for (const mark of marks) {
    if (
      !best ||
      (mark.createdAt ?? '') > (best.createdAt ?? '') ||
      ((mark.createdAt ?? '') === (best.createdAt ?? '') && mark.index > best.index)
    ) {
      best = mark;
    }
  }
  return best ? best.index : null;
}

/** The small badge of a workflow cell: ``stage · step`` (ids), with the behavior as its title. */
export function badgeText(mark: CellMark): { text: string; title: string } | null {
  if (!mark.stage) {
    return null;
  }
  if (mark.stage.startsWith('_')) {
    // the workflow's own cells (e.g. ``_inputs``: user_problem, user_submit_files)
    const name = mark.stage.replace(/^_+/, '').replace(/_/g, ' ');
    return { text: `workflow ${name}`, title: `Written by the workflow: its ${name} cell` };
  }
  const parts = [mark.stage];
  if (mark.step) {
    parts.push(mark.step);
  }
  const title = [
    `Stage ${mark.stage}${mark.visit && mark.visit > 1 ? ` (visit ${mark.visit})` : ''}`,
    mark.step ? `step ${mark.step}` : null,
    mark.behavior
      ? `behavior ${mark.behavior}${mark.iteration && mark.iteration > 1 ? ` (iteration ${mark.iteration})` : ''}`
      : null
  ]
    .filter(Boolean)
    .join(', ');
  return { text: parts.join(' · '), title: `Written by the workflow: ${title}` };
}
