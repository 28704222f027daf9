/**
 * What a save does instead of Lab's "File Changed" dialog.
 *
 * Lab checks, when it saves, that the file on disk is the version this window last loaded or
 * saved; when it is not, it asks the user to overwrite (losing the other writer's cells) or
 * revert (losing their own edits). Neither is right here:
 *
 * - With jupyter-collaboration the room is the file's only writer and saves the shared
 *   document after every change; a save is a request to the room to write that document,
 *   which holds every window's and the workflow's cells. A conflict there is the room's own
 *   save racing the window's notice of it, and "Overwrite" is always the answer that loses
 *   nothing: the save overwrites.
 * - Without it, the co-editor takes a newer file in before each save (merged cell by cell);
 *   a conflict means another window saved in the moment between that look and this save
 *   (the workflow's writer window changing hands). The save takes that file in too and is
 *   made again, through Lab's same check, a few times at most; only then does Lab ask.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Contents } from '@jupyterlab/services';

/** The parts of Lab's document context (private in Lab 4) a save goes through. */
interface ContextInternals {
  _raiseConflict?: (model: Contents.IModel, options: Partial<Contents.IModel>) => Promise<unknown>;
  _maybeSave?: (options: Partial<Contents.IModel>) => Promise<unknown>;
  _contentProviderId?: string;
  _manager?: { contents: Contents.IManager };
}

/** How many times one save takes in a file saved under it before Lab asks. */
const ATTEMPTS = 3;

/** How a conflicting save outside collaboration merges and goes on. */
export interface ConflictMerge {
  /** Take the file on disk into the document (merged in place); false when it cannot be. */
  takeIn(panel: NotebookPanel): Promise<boolean>;
  /** The save now writes ``content`` (the document after the take-in). */
  rewritten(panel: NotebookPanel, content: unknown): void;
}

/** Make ``panel``'s saves resolve conflicts as the module doc says (in a Lab without these
 *  internals its own check and dialog stay). */
export function resolveConflicts(panel: NotebookPanel, merge: ConflictMerge): void {
  const context = panel.context;
  const internals = context as unknown as ContextInternals;
  const ask = internals._raiseConflict;
  const again = internals._maybeSave;
  if (typeof ask !== 'function') {
    return;
  }
  const attempts = new WeakMap<object, number>();
  internals._raiseConflict = async (model, options) => {
    const manager = internals._manager;
    if (context.model.collaborative && manager) {
      return manager.contents.save(context.path, {
        ...options,
        contentProviderId: internals._contentProviderId
      } as Partial<Contents.IModel>);
    }
    const attempt = attempts.get(options) ?? 0;
    if (
      context.model.collaborative ||
      typeof again !== 'function' ||
      attempt >= ATTEMPTS ||
      !(await merge.takeIn(panel))
    ) {
      return ask.call(context, model, options);
    }
    const content = context.model.toJSON();
    const retry = { ...options, content } as Partial<Contents.IModel>;
    attempts.set(retry, attempt + 1);
    merge.rewritten(panel, content);
    return again.call(context, retry);
  };
}
