/**
 * The cell edits that turn an open document's cells into a target list of cells, in place.
 *
 * A window that takes in a newer file (another window's save, the server's write) used to
 * *revert*: Lab replaced the whole document with the file. Anything the user typed after the
 * file was read -- the revert fetches it first, a merged save writes it first -- was lost
 * with it, and the cell being typed in was redrawn. Applying the difference instead touches
 * only the cells that differ, in one synchronous step, so nothing typed is ever replaced
 * and the cell being edited keeps its editor.
 *
 * Pure: no Lab imports, unit-tested in ``test/inPlace.test.ts``.
 */
import { canonical, type CellJson } from './threeWay';

/** One edit of a document's cell list, applied in order. */
export type CellEdit =
  | { kind: 'delete'; index: number }
  | { kind: 'insert'; index: number; cell: CellJson }
  | { kind: 'move'; from: number; to: number }
  | { kind: 'update'; index: number; cell: CellJson };

/**
 * The edits that make ``current`` (cells by id, in document order) equal to ``target``:
 * deletes of cells the target lacks (and of repeated ids), then for each target position a
 * move of the cell it holds, an insert of a new one, and an update of one whose content
 * differs. Cells already in place and unchanged get no edit.
 */
export function cellEdits(current: readonly CellJson[], target: readonly CellJson[]): CellEdit[] {
  const edits: CellEdit[] = [];
  const wanted = new Set(target.map(cell => cell.id));
  const ids: string[] = [];
  const texts = new Map<string, string>();
  const seen = new Set<string>();
  // deletes first, from the end, so earlier indexes stay valid
  const keep: boolean[] = current.map(cell => {
    const kept = wanted.has(cell.id) && !seen.has(cell.id);
    seen.add(cell.id);
    return kept;
  });
  for (let i = current.length - 1; i >= 0; i--) {
    if (!keep[i]) {
      edits.push({ kind: 'delete', index: i });
    }
  }
  current.forEach((cell, i) => {
    if (keep[i]) {
      ids.push(cell.id);
      texts.set(cell.id, canonical(cell));
    }
  });
  target.forEach((cell, index) => {
    if (ids[index] !== cell.id) {
      const from = ids.indexOf(cell.id, index + 1);
      if (from === -1) {
        ids.splice(index, 0, cell.id);
        edits.push({ kind: 'insert', index, cell });
        return;
      }
      ids.splice(from, 1);
      ids.splice(index, 0, cell.id);
      edits.push({ kind: 'move', from, to: index });
    }
    if (texts.get(cell.id) !== canonical(cell)) {
      edits.push({ kind: 'update', index, cell });
    }
  });
  return edits;
}

/** ``cells`` after ``edits`` (what applying them to a document gives; for tests and checks). */
export function applyEdits(cells: readonly CellJson[], edits: readonly CellEdit[]): CellJson[] {
  const out = [...cells];
  for (const edit of edits) {
    if (edit.kind === 'delete') {
      out.splice(edit.index, 1);
    } else if (edit.kind === 'insert') {
      out.splice(edit.index, 0, edit.cell);
    } else if (edit.kind === 'move') {
      const [moved] = out.splice(edit.from, 1);
      out.splice(edit.to, 0, moved);
    } else {
      out[edit.index] = edit.cell;
    }
  }
  return out;
}
