/**
 * Cell-level three-way merge of a notebook, for a save that finds the file changed on disk.
 *
 * Without jupyter-collaboration the same notebook can be open in two windows; the workflow's
 * cells reach the file through one of them, and the user may save in either. When a window
 * saves and the file is newer than the version it loaded, Lab would ask "File Changed" and
 * offer to overwrite (losing the other window's cells) or revert (losing the user's edits).
 * Instead the window merges: ``base`` is the file as this window last loaded or saved it,
 * ``mine`` its document now, ``theirs`` the file now. Cells are matched by id (nbformat 4.5):
 *
 * - a cell only I changed keeps my version; one only they changed takes theirs; one both
 *   changed keeps mine (the user's edit in front of them wins);
 * - a cell they added appears after its nearest predecessor (in their order) that is kept;
 * - a cell they deleted goes, unless I changed it; a cell I deleted stays deleted;
 * - notebook metadata merges key by key the same way.
 *
 * Pure: no Lab imports, unit-tested in ``test/threeWay.test.ts``.
 */

/** A JSON value as in a notebook file. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** An nbformat cell as JSON (``id`` required: nbformat 4.5 notebooks carry it). */
export interface CellJson {
  id: string;
  [key: string]: Json;
}

/** The parts of a notebook the merge reads. */
export interface NotebookJson {
  cells: CellJson[];
  metadata: { [key: string]: Json };
  [key: string]: Json | CellJson[];
}

/** A canonical text of a JSON value (object keys sorted; a multi-line source joined). */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) {
    return '[' + value.map(canonical).join(',') + ']';
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return (
      '{' +
      Object.keys(record)
        .filter(key => record[key] !== undefined)
        .sort()
        .map(key => JSON.stringify(key) + ':' + canonical(normalise(key, record[key])))
        .join(',') +
      '}'
    );
  }
  return JSON.stringify(value);
}

function normalise(key: string, value: unknown): unknown {
  // nbformat allows ``source`` (and stream ``text``) as a list of lines or one string
  if ((key === 'source' || key === 'text') && Array.isArray(value)) {
    return value.join('');
  }
  return value;
}

function byId(cells: CellJson[]): Map<string, string> {
  return new Map(cells.map(cell => [cell.id, canonical(cell)]));
}

/** Merge the cells of ``mine`` and ``theirs`` against their common ``base``. */
export function mergeCells(base: CellJson[], mine: CellJson[], theirs: CellJson[]): CellJson[] {
  const baseText = byId(base);
  const theirsText = byId(theirs);
  const theirsCell = new Map(theirs.map(cell => [cell.id, cell]));
  const mineIds = new Set(mine.map(cell => cell.id));

  const merged: CellJson[] = [];
  for (const cell of mine) {
    const was = baseText.get(cell.id);
    const now = theirsText.get(cell.id);
    const changedByMe = was === undefined || canonical(cell) !== was;
    if (was !== undefined && now === undefined && !changedByMe) {
      continue; // they deleted it, I did not touch it
    }
    if (now !== undefined && was !== undefined && !changedByMe && now !== was) {
      merged.push(theirsCell.get(cell.id) as CellJson); // only they changed it
      continue;
    }
    merged.push(cell);
  }

  // their new cells: not in the base (I could not have deleted them) and not already mine
  let anchor: string | null = null; // the id of the kept cell that precedes, in their order
  for (const cell of theirs) {
    const kept = merged.some(m => m.id === cell.id);
    if (kept) {
      anchor = cell.id;
      continue;
    }
    if (baseText.has(cell.id) || mineIds.has(cell.id)) {
      continue; // I deleted it
    }
    const at = anchor === null ? 0 : merged.findIndex(m => m.id === anchor) + 1;
    merged.splice(at, 0, cell);
    anchor = cell.id;
  }
  return merged;
}

/** Merge notebook-level metadata key by key (a key only they changed takes theirs). */
export function mergeMetadata(
  base: { [key: string]: Json },
  mine: { [key: string]: Json },
  theirs: { [key: string]: Json }
): { [key: string]: Json } {
  const merged: { [key: string]: Json } = {};
  const keys = new Set([...Object.keys(base), ...Object.keys(mine), ...Object.keys(theirs)]);
  for (const key of keys) {
    const changedByMe = canonical(mine[key]) !== canonical(base[key]);
    const value = changedByMe ? mine[key] : theirs[key];
    if (value !== undefined) {
      merged[key] = value;
    }
  }
  return merged;
}

/** The notebook a save writes when the file changed since ``base``: ``mine`` merged with it. */
export function mergeNotebook(
  base: NotebookJson,
  mine: NotebookJson,
  theirs: NotebookJson
): NotebookJson {
  return {
    ...mine,
    cells: mergeCells(base.cells, mine.cells, theirs.cells),
    metadata: mergeMetadata(base.metadata ?? {}, mine.metadata ?? {}, theirs.metadata ?? {})
  };
}
