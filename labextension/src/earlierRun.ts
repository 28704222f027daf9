/**
 * "Remove the earlier run's cells": what the start form offers on a notebook that holds the
 * cells of an earlier workflow, so a new workflow started from the panel leaves the notebook
 * as ``notebook-bcc run`` does when run again (papermill's habit): the user's own cells, in
 * their order, then the new run -- the earlier run's record stays in the store.
 *
 * The rule is the command line's (``notebook_bcc.engine.rerun.drop_workflow_cells``): a cell
 * is the workflow's when its metadata has a ``notebook_bcc`` key -- every cell a workflow
 * writes carries one, its inputs and parameters cells included, and so does a workflow cell
 * the user edited (detached, D10: Lab keeps a cell's metadata). A cell without it is the
 * user's and stays. The notebook's ``metadata.notebook_bcc.workflow_id`` goes too.
 *
 * The notebook is open in Lab, so the cells are removed from Lab's document (one transaction,
 * then Lab saves it): the server never writes an open notebook's file, and a workflow cell
 * gone from the document stays gone (D10) -- nothing is brought back by a merge. Left with
 * no cell, the document gets the blank cell Lab gives a new notebook, in the same step (Lab
 * would add it a frame later, after the save, leaving the notebook dirty), and the new run's
 * first cell takes its place, as on a notebook Lab just made.
 *
 * Cells are removed only when the server will let the new workflow replace the earlier ones
 * (finished, failed or released, as ``may_yield_notebook``): an unfinished run keeps its
 * cells and the server refuses the start (409). A start refused for any reason puts the
 * cells back where they were, and the document is saved again.
 *
 * Pure over a minimal view of Lab's shared notebook (no Lab imports): unit-tested in
 * ``test/earlierRun.test.ts``.
 */
import type { WorkflowSummary } from './types';

/** The metadata key notebook-bcc owns (in cells and in the notebook). */
export const BCC_KEY = 'notebook_bcc';

/** A cell as the shared model gives it back (``toJSON``): nbformat JSON with its id. */
export type CellData = Record<string, unknown> & { id?: string; cell_type: string };

/** The part of a shared cell used here. */
export interface SharedCellView {
  readonly id: string;
  getMetadata(): unknown;
  getSource(): string;
  toJSON(): unknown;
}

/**
 * The part of Lab's ``ISharedNotebook`` used here (a fake in the tests). Inside a
 * ``transact`` its ``cells`` still list the cells as they were before it (Lab's list is
 * refreshed when the transaction ends): positions are computed before, never read inside.
 */
export interface SharedNotebookView {
  readonly cells: readonly SharedCellView[];
  transact(f: () => void): void;
  deleteCell(index: number): void;
  insertCells(index: number, cells: CellData[]): ReadonlyArray<{ readonly id: string }>;
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: never): void;
}

/** Whether a cell with this metadata was written by a workflow (the command line's rule). */
export function isWorkflowCell(metadata: unknown): boolean {
  return (
    typeof metadata === 'object' &&
    metadata !== null &&
    !Array.isArray(metadata) &&
    Object.prototype.hasOwnProperty.call(metadata, BCC_KEY)
  );
}

/** How many cells of earlier workflows the document holds. */
export function countEarlierCells(shared: SharedNotebookView): number {
  return shared.cells.filter(cell => isWorkflowCell(cell.getMetadata())).length;
}

/** The start form's words for the checkbox. */
export function removeEarlierLabel(count: number): string {
  return `Remove the earlier run's ${count} cell${count === 1 ? '' : 's'} (its record stays in the store)`;
}

/** What one removal did, and how to undo it. */
export interface RemovedRun {
  /** How many cells were removed. */
  count: number;
  /** Put the removed cells back where they were (and the notebook's workflow id). */
  restore(): void;
}

/** The blank cell Lab gives a new notebook (its default cell type). */
export function blankCell(cellType = 'code'): CellData {
  return cellType === 'code'
    ? { cell_type: 'code', source: '', metadata: { trusted: true }, outputs: [], execution_count: null }
    : { cell_type: cellType, source: '', metadata: {} };
}

/**
 * Remove every cell of earlier workflows from ``shared`` in one transaction (see the module
 * doc); null when there is none. ``blank``: the cell put in when nothing would be left.
 */
export function removeEarlierCells(
  shared: SharedNotebookView,
  blank: CellData = blankCell()
): RemovedRun | null {
  const order = shared.cells.map(cell => cell.id);
  const removed: Array<{ at: number; cell: CellData }> = [];
  shared.cells.forEach((cell, at) => {
    if (isWorkflowCell(cell.getMetadata())) {
      removed.push({ at, cell: { ...(cell.toJSON() as CellData), id: cell.id } });
    }
  });
  if (removed.length === 0) {
    return null;
  }
  const own = shared.getMetadata(BCC_KEY);
  const ownBlock =
    typeof own === 'object' && own !== null && !Array.isArray(own)
      ? (own as Record<string, unknown>)
      : null;
  const workflowId = ownBlock && 'workflow_id' in ownBlock ? ownBlock.workflow_id : undefined;
  let blankId: string | null = null;
  shared.transact(() => {
    for (let i = removed.length - 1; i >= 0; i--) {
      shared.deleteCell(removed[i].at);
    }
    if (removed.length === order.length) {
      blankId = shared.insertCells(0, [blank])[0]?.id ?? null;
    }
    if (ownBlock && workflowId !== undefined) {
      const rest = { ...ownBlock };
      delete rest.workflow_id;
      shared.setMetadata(BCC_KEY, rest as never);
    }
  });
  return {
    count: removed.length,
    restore: () => restoreCells(shared, order, removed, blankId, workflowId)
  };
}

/** Put ``removed`` back: each after the nearest cell that preceded it and is still there
 *  (the user may have edited meanwhile), the blank cell taken out again while still blank. */
function restoreCells(
  shared: SharedNotebookView,
  order: readonly string[],
  removed: ReadonlyArray<{ at: number; cell: CellData }>,
  blankId: string | null,
  workflowId: unknown
): void {
  // the document's ids as the edits below leave them, computed before the transaction
  const ids = shared.cells.map(cell => cell.id);
  const edits: Array<{ delete: number } | { insert: number; cell: CellData }> = [];
  const blankAt = blankId === null ? -1 : ids.indexOf(blankId);
  if (blankAt >= 0 && !shared.cells[blankAt].getSource().trim()) {
    edits.push({ delete: blankAt });
    ids.splice(blankAt, 1);
  }
  for (const { at, cell } of removed) {
    const id = cell.id ?? '';
    if (ids.includes(id)) {
      continue; // back already (nothing to do twice)
    }
    let index = 0;
    for (let before = at - 1; before >= 0; before--) {
      const found = ids.indexOf(order[before]);
      if (found >= 0) {
        index = found + 1;
        break;
      }
    }
    edits.push({ insert: index, cell });
    ids.splice(index, 0, id);
  }
  const own = shared.getMetadata(BCC_KEY);
  const block =
    typeof own === 'object' && own !== null && !Array.isArray(own)
      ? (own as Record<string, unknown>)
      : {};
  shared.transact(() => {
    for (const edit of edits) {
      if ('delete' in edit) {
        shared.deleteCell(edit.delete);
      } else {
        shared.insertCells(edit.insert, [edit.cell]);
      }
    }
    if (workflowId !== undefined) {
      shared.setMetadata(BCC_KEY, { ...block, workflow_id: workflowId } as never);
    }
  });
}

/** Run statuses the server lets a new workflow replace (``may_yield_notebook``). */
const YIELDING = new Set(['completed', 'cancelled', 'failed']);

/**
 * Whether the server will let a new workflow on ``path`` replace its earlier ones: each one
 * still holding the notebook is completed, cancelled or failed and not running. (Else the
 * server refuses the start with a 409 and the cells must stay.)
 */
export function earlierRunsYield(workflows: readonly WorkflowSummary[], path: string): boolean {
  return workflows
    .filter(w => w.notebook_path === path && w.active)
    .every(w => YIELDING.has(w.run_status) && !w.running && !w.recovering);
}

/** What :func:`startRemovingEarlier` needs from the panel and Lab. */
export interface EarlierRunHost {
  /** The open document's shared model (null: the notebook is not open in this window). */
  notebook(): SharedNotebookView | null;
  /** Lab's default cell type for the blank cell of an emptied notebook. */
  defaultCell?(): string;
  /** The notebook's workflows as the server lists them. */
  workflows(): Promise<WorkflowSummary[]>;
  /** Save the document (once the cells are removed, and again once put back). */
  save(): Promise<void>;
}

/**
 * Start a workflow (``start``: save the document and create the workflow) after removing
 * the earlier run's cells when ``remove`` is asked and the server will let the new workflow
 * replace the earlier ones (and saving the document); a start that fails puts them back
 * (and saves), then throws.
 * Answers what ``start`` answered and how many cells were removed.
 */
export async function startRemovingEarlier<T>(
  host: EarlierRunHost,
  path: string,
  remove: boolean,
  start: () => Promise<T>
): Promise<{ result: T; removed: number }> {
  let removed: RemovedRun | null = null;
  if (remove) {
    const shared = host.notebook();
    if (shared !== null && countEarlierCells(shared) > 0) {
      let yields = false;
      try {
        yields = earlierRunsYield(await host.workflows(), path);
      } catch {
        yields = false; // cannot tell: keep the cells (the start likely fails too)
      }
      // looked up again: the document may have been closed while the server answered
      const now = host.notebook();
      if (yields && now !== null) {
        removed = removeEarlierCells(now, blankCell(host.defaultCell?.()));
      }
    }
  }
  try {
    if (removed !== null) {
      await host.save(); // the file the server reads at the start holds them no more
    }
    const result = await start();
    return { result, removed: removed?.count ?? 0 };
  } catch (error) {
    if (removed !== null) {
      removed.restore();
      await host.save().catch(() => undefined);
    }
    throw error;
  }
}
