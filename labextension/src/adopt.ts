/**
 * Take a notebook file's cells into an open document in place, instead of Lab's revert.
 *
 * Lab's ``context.revert()`` fetches the file and then replaces the whole document with it:
 * what the user typed while the file travelled is gone, and so is the editor of the cell
 * they type in. The co-editor takes in newer files often (another window's save, a merged
 * save of its own), so it edits only the cells that differ (:func:`cellEdits`), in one
 * synchronous step between two keystrokes, and tells Lab which version of the file the
 * document now stands on (so Lab's next save does not report the file as changed).
 */
import type { DocumentRegistry } from '@jupyterlab/docregistry';
import type { INotebookModel } from '@jupyterlab/notebook';
import type * as nbformat from '@jupyterlab/nbformat';
import type { Contents } from '@jupyterlab/services';

import { cellEdits, type CellEdit } from './inPlace';
import { replaceOutputs, type CodeOutputs } from './outputs';
import { canonical, type CellJson, type NotebookJson } from './threeWay';

/** The part of Lab's document context (private in Lab 4) that records the file's version. */
interface ContextInternals {
  _updateContentsModel?: (model: Contents.IModel) => void;
}

type NotebookContext = DocumentRegistry.IContext<INotebookModel>;

/**
 * Make the document of ``context`` hold ``target`` (its cells and notebook metadata) by
 * editing it in place, and record ``file`` (a contents model of the file on disk, with its
 * hash) as the version the document stands on. False, with nothing changed, when this Lab
 * has no way to record the version or a target cell has no id (an nbformat < 4.5 file).
 */
export function adoptInPlace(
  context: NotebookContext,
  target: NotebookJson,
  file: Contents.IModel
): boolean {
  const record = (context as unknown as ContextInternals)._updateContentsModel;
  if (typeof record !== 'function' || !target.cells.every(c => typeof c.id === 'string' && c.id)) {
    return false;
  }
  const model = context.model;
  const now = model.toJSON() as unknown as NotebookJson;
  // each edit is its own shared-model transaction: within one, the cell list is updated
  // only when it ends, and the next edit's index would read the old list
  for (const edit of cellEdits(now.cells, target.cells)) {
    applyEdit(model, edit);
  }
  const metadata = target.metadata ?? {};
  for (const key of Object.keys(now.metadata ?? {})) {
    if (!(key in metadata)) {
      model.deleteMetadata(key);
    }
  }
  for (const [key, value] of Object.entries(metadata)) {
    if (canonical(model.getMetadata(key)) !== canonical(value)) {
      model.setMetadata(key, value as never);
    }
  }
  record.call(context, { ...file, content: null });
  return true;
}

function applyEdit(model: INotebookModel, edit: CellEdit): void {
  const shared = model.sharedModel;
  if (edit.kind === 'delete') {
    shared.deleteCell(edit.index);
  } else if (edit.kind === 'move') {
    shared.moveCell(edit.from, edit.to);
  } else if (edit.kind === 'insert') {
    shared.insertCell(edit.index, edit.cell as unknown as nbformat.ICell as never);
  } else if (!updateCell(model, edit.index, edit.cell)) {
    shared.deleteCell(edit.index);
    shared.insertCell(edit.index, edit.cell as unknown as nbformat.ICell as never);
  }
}

/** Update the cell at ``index`` to ``cell`` field by field; false when it cannot be (its
 *  type or attachments differ), and the caller replaces it. */
function updateCell(model: INotebookModel, index: number, cell: CellJson): boolean {
  const current = model.sharedModel.getCell(index);
  const json = current.toJSON() as unknown as CellJson;
  if (
    json.cell_type !== cell.cell_type ||
    (cell.cell_type !== 'code' && canonical(json.attachments) !== canonical(cell.attachments))
  ) {
    return false;
  }
  const source = Array.isArray(cell.source) ? cell.source.join('') : String(cell.source ?? '');
  if (current.getSource() !== source) {
    current.setSource(source);
  }
  if (canonical(json.metadata ?? {}) !== canonical(cell.metadata ?? {})) {
    current.setMetadata((cell.metadata ?? {}) as never);
  }
  if (cell.cell_type === 'code') {
    const code = current as unknown as CodeOutputs;
    replaceOutputs(code, (cell.outputs ?? []) as unknown as nbformat.IOutput[]);
    const count = (cell.execution_count ?? null) as nbformat.ExecutionCount;
    if (code.execution_count !== count) {
      code.execution_count = count;
    }
  }
  return true;
}
