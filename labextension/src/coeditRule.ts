/**
 * Whether a merge plan made for one view of a document still applies to the document now
 * (pure; the user may have typed or added a cell while the plan travelled).
 */

/** The ops a plan carries, as far as this check needs them. */
export interface PlannedOp {
  op: 'insert' | 'update' | 'replace';
  index: number;
  cell_id: string;
}

/**
 * True when the document's cells are the same, in the same order, as when the plan was made,
 * and every cell the plan updates still has the source it had then (an edit made meanwhile
 * must detach the cell, not be overwritten).
 */
export function opsStillApply(
  sent: ReadonlyArray<readonly [string | null, string]>,
  now: ReadonlyArray<readonly [string | null, string]>,
  ops: ReadonlyArray<PlannedOp>
): boolean {
  if (sent.length !== now.length) {
    return false;
  }
  for (let i = 0; i < sent.length; i++) {
    if (sent[i][0] !== now[i][0]) {
      return false;
    }
  }
  const updated = new Set(ops.filter(op => op.op === 'update').map(op => op.cell_id));
  for (let i = 0; i < sent.length; i++) {
    const id = sent[i][0];
    if (id !== null && updated.has(id) && sent[i][1] !== now[i][1]) {
      return false;
    }
  }
  return true;
}

/** A cell as this check compares it: id, type and source (outputs and metadata aside). */
export interface CellText {
  id: string;
  cell_type?: unknown;
  source?: unknown;
}

function sourceText(source: unknown): string {
  return Array.isArray(source) ? source.join('') : typeof source === 'string' ? source : '';
}

/**
 * Whether a dirty document holds edits of the user's: cells added, removed, moved, retyped or
 * typed in since the file was loaded or saved (``base``; unknown counts as edited). A
 * document Lab only made dirty itself -- the kernelspec and language_info it writes into a new
 * notebook's metadata, outputs of cells the user ran -- has none, so saving it with the
 * workflow's cells loses nothing of the user's and keeps the file in step with the run.
 */
export function cellsEdited(
  base: ReadonlyArray<CellText> | undefined,
  now: ReadonlyArray<CellText>
): boolean {
  if (base === undefined || base.length !== now.length) {
    return true;
  }
  return base.some(
    (cell, i) =>
      cell.id !== now[i].id ||
      cell.cell_type !== now[i].cell_type ||
      sourceText(cell.source) !== sourceText(now[i].source)
  );
}
