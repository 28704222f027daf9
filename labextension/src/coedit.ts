/**
 * Co-editing without jupyter-collaboration: the workflow's cells go into the open document.
 *
 * Two writers on one file lose cells (Lab's "File Changed" dialog, then "Overwrite"). So this
 * browser *holds* every notebook it has open (a heartbeat to ``POST /documents``): while held,
 * the server does not write the file. When a held notebook's workflow changes cells, the
 * coeditor asks the server for a merge plan against the document (``/documents/merge``) and
 * applies it to the document model (inserts and in-place updates of workflow cells only).
 * A document without unsaved edits of the user's cells is saved at once (it stays clean; Lab's
 * own metadata changes do not count, :func:`cellsEdited`); one with the user's edits is saved
 * by the user (Ctrl-S, autosave), never by a second save racing theirs. Each
 * save acknowledges the plans it wrote. Lab stays the only writer of the file, so the user
 * can edit, run and save at any time. With jupyter-collaboration the server writes into the
 * shared room document itself and nothing here runs.
 *
 * The same notebook open in two windows (two browser tabs) has two document models. Only one
 * of them -- the server names it the ``writer``: the window with unsaved edits, else the one
 * that opened it first -- takes the workflow's cells and saves; the others take in the file
 * (in place, :func:`adoptInPlace`) whenever it is newer than theirs and they have nothing
 * unsaved, so no window's save ever finds the file changed under it by another window's
 * workflow save.
 */
import type { IDocumentManager } from '@jupyterlab/docmanager';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type * as nbformat from '@jupyterlab/nbformat';
import type { Contents } from '@jupyterlab/services';
import { type ISignal, Signal } from '@lumino/signaling';

import type { BccApi, CellOp, MergeAnswer } from './api';
import { adoptInPlace } from './adopt';
import { addOutputs, clearOutputs, outputsDiffer, type CodeOutputs } from './outputs';
import { cellsEdited, opsStillApply } from './coeditRule';
import { resolveConflicts } from './conflicts';
import { serializeRenames, type SaveQueue } from './renames';
import { canonical, mergeNotebook, type NotebookJson } from './threeWay';

/** What the co-editor does, for whoever debugs it: the browser console's verbose level
 *  (hidden unless asked for), one line per merge, plan and save, never per heartbeat. */
function trace(message: string): void {
  const at = new Date().toISOString().slice(11, 23);
  console.debug(`notebook-bcc co-editing: ${at} ${message}`);
}

/** Heartbeat period; cells appear within this (sooner on a live "cell" event). */
const BEAT_MS = 1500;

/** Whether a contents request failed because the file does not exist. */
function notFound(error: unknown): boolean {
  return (error as { response?: { status?: number } } | null)?.response?.status === 404;
}

function randomHolder(): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('');
}

export class DocumentCoeditor {
  readonly holder = randomHolder();
  private timer: number | null = null;
  private beating = false;
  private disposed = false;
  private readonly versions = new Map<string, number>();
  private readonly busy = new Set<string>();
  /** Paths whose last merge could not be applied (the document moved): merge again. */
  private readonly retry = new Set<string>();
  /** Paths held by the last successful heartbeat, and until when (epoch ms). */
  private held = new Set<string>();
  private heldUntil = 0;
  /** Plans applied to a document and not yet in its file: acknowledged by its next save. */
  private readonly unsaved = new Map<string, MergeAnswer[]>();
  private readonly saving = new Set<string>();
  /** Paths whose last save failed (the server was down): saved again once it answers. */
  private readonly failedSaves = new Set<string>();
  /** Paths whose failed save is being made again now. */
  private readonly retrying = new Set<string>();
  /** Documents Lab replaced with their file (a revert) since their last merge, by how many
   *  times: the next merge says so, and workflow cells the file lacks are put back. */
  private readonly reloaded = new Map<string, number>();
  private readonly inFlight = new Map<string, MergeAnswer[]>();
  /** Each document's file as this window last loaded or saved it (the merge base). */
  private readonly bases = new WeakMap<NotebookPanel, NotebookJson>();
  /** Each document as the save under way writes it. */
  private readonly written = new WeakMap<NotebookPanel, NotebookJson>();
  /** Files deleted through this window's contents manager (until saved or made again). */
  private readonly deleted = new Set<string>();
  /** How many deletes of each path this window saw (a save under way compares). */
  private readonly deletes = new Map<string, number>();
  /** Each document's save as the co-editor makes it (skipped once the file is gone). */
  private readonly ownSaves = new WeakMap<NotebookPanel, () => Promise<void>>();
  /** Each document's save queue (its tail, and a way to hold the saves queued after now). */
  private readonly queues = new WeakMap<NotebookPanel, SaveQueue>();
  private readonly _writing = new Signal<this, { path: string; workflowId: string }>(this);

  constructor(
    private readonly api: BccApi,
    private readonly tracker: INotebookTracker,
    private readonly docManager: IDocumentManager
  ) {
    this.timer = window.setInterval(() => void this.beat(), BEAT_MS);
    // a page going away (reload, closed window) lets go of its notebooks at once: another
    // window, or the reloaded page, takes the workflow's cells from its next beat instead
    // of after the hold lapses (90 s, kept long for hidden tabs whose timers are throttled)
    window.addEventListener('pagehide', this.onPageHide);
    serializeRenames(docManager.services.contents, tracker, this.queues);
    docManager.services.contents.fileChanged.connect((_, change) => {
      if (change.type === 'delete' && change.oldValue?.path) {
        this.deleted.add(change.oldValue.path);
        this.deletes.set(change.oldValue.path, (this.deletes.get(change.oldValue.path) ?? 0) + 1);
      } else if (change.newValue?.path) {
        this.deleted.delete(change.newValue.path);
      }
    });
    tracker.widgetAdded.connect((_, panel) => {
      this.serializeSaves(panel);
      this.watchReverts(panel);
      resolveConflicts(panel, {
        takeIn: async p => (await this.takeInFile(p, true)) !== null,
        rewritten: (p, content) => this.written.set(p, content as NotebookJson)
      });
      const remember = (): void => {
        if (!panel.context.isDisposed) {
          this.bases.set(panel, panel.context.model.toJSON() as unknown as NotebookJson);
        }
      };
      void panel.context.ready.then(remember);
      panel.context.fileChanged.connect(remember);
      panel.context.saveState.connect((context, state) => {
        const path = context.path;
        trace(`save of ${path} ${state}`);
        if (state === 'started') {
          // what this save writes: the plans applied so far, not those applied meanwhile,
          // and the document as it is now (Lab takes its content in this same step)
          this.saving.add(path);
          this.inFlight.set(path, this.unsaved.get(path) ?? []);
          this.unsaved.delete(path);
          this.written.set(panel, context.model.toJSON() as unknown as NotebookJson);
          return;
        }
        this.saving.delete(path);
        const plans = this.inFlight.get(path) ?? [];
        this.inFlight.delete(path);
        const written = this.written.get(panel);
        this.written.delete(panel);
        if (state === 'completed') {
          if (written !== undefined) {
            this.keepUnsavedTyping(panel, written);
          }
          void this.acknowledge(panel, plans);
          if ((this.unsaved.get(path) ?? []).length > 0) {
            // workflow cells merged while this save was under way are not in the file: the
            // save asked for covers them too, or the notebook would stay modified after it
            void this.save(panel);
          }
          this.failedSaves.delete(path);
        } else {
          this.unsaved.set(path, [...plans, ...(this.unsaved.get(path) ?? [])]);
          // a save that failed because the server went away is made again when it answers:
          // the document holds cells its file lacks, and none of its merges saves it now
          // (they count the unsaved cells as the user's)
          this.failedSaves.add(path);
        }
      });
      void this.beat();
    });
  }

  /**
   * A save just ended and Lab marked the document clean. What the user typed while it was
   * under way is not in the file, though: keep the document dirty then (else the next newer
   * file taken into a "clean" document would replace the typing), and make the merge base
   * the file as written, not the document now.
   */
  private keepUnsavedTyping(panel: NotebookPanel, written: NotebookJson): void {
    const model = panel.context.model;
    this.bases.set(panel, written);
    const now = model.toJSON() as unknown as NotebookJson;
    if (cellsEdited(written.cells, now.cells)) {
      model.dirty = true;
    }
  }

  /** Every plan applied to ``panel``'s document is in its file now (it was just saved). */
  private async acknowledge(panel: NotebookPanel, plans: MergeAnswer[]): Promise<void> {
    const path = panel.context.path;
    const saved = panel.context.contentsModel?.last_modified ?? null;
    for (const plan of plans) {
      try {
        await this.api.acknowledgeMerge(path, plan.token, saved, plan.detached, plan.deleted);
      } catch {
        // the server forgot the plan (restart): the next merge finds the cells in place
      }
    }
  }

  private readonly onPageHide = (): void => {
    void this.api.releaseDocuments(this.holder).catch(() => undefined);
  };

  dispose(): void {
    this.disposed = true;
    window.removeEventListener('pagehide', this.onPageHide);
    if (this.timer !== null) {
      window.clearInterval(this.timer);
      this.timer = null;
    }
    void this.api.holdDocuments(this.holder, []).catch(() => undefined);
    Signal.clearData(this);
  }

  /** Whether this browser holds ``path`` now (the server then writes into its document). */
  holds(path: string): boolean {
    return this.held.has(path) && Date.now() < this.heldUntil;
  }

  /** Each heartbeat's workflows writing an open notebook (``path``): a panel showing that
   *  notebook follows the workflow now instead of at its next discovery. */
  get writing(): ISignal<this, { path: string; workflowId: string }> {
    return this._writing;
  }

  /** A workflow event says cells changed: look now rather than at the next beat. */
  poke(): void {
    void this.beat();
  }

  private openNotebooks(): NotebookPanel[] {
    const panels: NotebookPanel[] = [];
    this.tracker.forEach(panel => {
      const context = panel.context;
      if (context.isReady && !context.model.collaborative) {
        panels.push(panel);
      }
    });
    return panels;
  }

  /**
   * Lab's revert (Reload from Disk; Revert to Checkpoint, which first puts the older file in
   * place) replaces the whole document with the file. The workflow cells the file lacks
   * were not deleted by the user: the next merge, made now rather than at the workflow's
   * next change, says the document was reloaded and the server puts them back.
   */
  private watchReverts(panel: NotebookPanel): void {
    const context = panel.context;
    const revert = context.revert.bind(context);
    context.revert = async (): Promise<void> => {
      await revert();
      const path = context.path;
      this.reloaded.set(path, (this.reloaded.get(path) ?? 0) + 1);
      this.retry.add(path);
      void this.beat();
    };
  }

  /**
   * The server answers again: save what failed. The path stays marked until a save of it
   * completes (a retry skipped because the file could not be looked at yet, or failing
   * again, is made at a later beat); a file deleted through this window is not saved again.
   */
  private retryFailedSave(panel: NotebookPanel): void {
    const path = panel.context.path;
    if (!this.failedSaves.has(path) || this.retrying.has(path)) {
      return;
    }
    if (this.deleted.has(path)) {
      this.failedSaves.delete(path);
      return;
    }
    if (this.saving.has(path) || this.busy.has(path)) {
      return;
    }
    this.retrying.add(path);
    void this.save(panel)
      .catch(() => undefined)
      .finally(() => this.retrying.delete(path));
  }

  /** One heartbeat: hold the open notebooks, merge those whose workflow moved on. */
  async beat(): Promise<void> {
    if (this.disposed || this.beating) {
      return;
    }
    this.beating = true;
    try {
      const panels = this.openNotebooks();
      const paths = [...new Set(panels.map(p => p.context.path))];
      // "dirty": with edits of the user's cells, or workflow cells not saved yet (not Lab's
      // own metadata): the window that writes the path changes hands only for those
      const edited = panels.filter(p => p.context.model.dirty && this.userEdited(p));
      const dirty = [...new Set(edited.map(p => p.context.path))];
      const sentAt = Date.now();
      const answer = await this.api.holdDocuments(this.holder, paths, dirty);
      this.held = new Set(paths);
      this.heldUntil = sentAt + answer.ttl * 1000;
      for (const panel of panels) {
        this.retryFailedSave(panel);
      }
      for (const doc of answer.documents) {
        const panel = panels.find(p => p.context.path === doc.path);
        if (!panel) {
          continue;
        }
        this._writing.emit({ path: doc.path, workflowId: doc.workflow_id });
        if (doc.writer === false) {
          // another window writes this notebook: follow its saves
          this.versions.delete(doc.path);
          void this.follow(panel);
        } else if (this.versions.get(doc.path) !== doc.version || this.retry.has(doc.path)) {
          const had = this.versions.get(doc.path);
          trace(`${doc.path}: cells version ${doc.version}, this document has ${had}`);
          void this.merge(panel, doc.version);
        }
      }
    } catch (error) {
      // the server may be restarting; the next beat holds again
      trace(`heartbeat failed: ${String(error)}`);
    } finally {
      this.beating = false;
    }
  }

  /** Not the writer: reload the file when it is newer and this document has nothing unsaved
   *  (what the user types here afterwards is then saved over the latest file). */
  private async follow(panel: NotebookPanel): Promise<void> {
    const path = panel.context.path;
    if (this.busy.has(path) || this.saving.has(path)) {
      return;
    }
    this.busy.add(path);
    try {
      await this.catchUp(panel);
    } catch {
      // the file is moving or the server restarting: the next beat looks again
    } finally {
      this.busy.delete(path);
    }
  }

  private view(panel: NotebookPanel): Array<[string | null, string]> {
    const shared = panel.context.model.sharedModel;
    return shared.cells.map(cell => [cell.id ?? null, cell.getSource()]);
  }

  /** Bring the workflow's cells into ``panel``'s document, save, acknowledge. */
  async merge(panel: NotebookPanel, version: number): Promise<void> {
    const context = panel.context;
    const path = context.path;
    if (this.busy.has(path)) {
      trace(`${path}: a merge is under way; version ${version} waits for the next heartbeat`);
      return;
    }
    this.busy.add(path);
    try {
      if (!this.saving.has(path)) {
        await this.catchUp(panel); // another window saved since: plan against its file
      }
      const sent = this.view(panel);
      const reverts = this.reloaded.get(path) ?? 0;
      const plan = await this.api.mergeDocument(
        this.holder,
        path,
        sent,
        context.contentsModel?.last_modified ?? null,
        reverts > 0
      );
      if (context.path !== path || context.isDisposed) {
        return;
      }
      // judged now, not before the plan travelled: a save that ended meanwhile (the retry of
      // one that failed, say) made the document clean, and this plan's cells must be saved
      const wasDirty = context.model.dirty && this.userEdited(panel);
      const changed = this.apply(panel, sent, plan);
      trace(
        `plan ${plan.token.slice(0, 8)} for ${path} at version ${plan.version}: ` +
          `${plan.ops.map(op => `${op.op} ${op.index}`).join(', ') || 'nothing to do'}` +
          (changed === null ? ' (no longer applies: planned again)' : '')
      );
      if (changed === null) {
        this.retry.add(path); // the user changed the document meanwhile: plan again
        return;
      }
      this.retry.delete(path);
      if (reverts > 0 && this.reloaded.get(path) === reverts) {
        this.reloaded.delete(path); // no other revert since this plan was asked for
      }
      this.versions.set(path, Math.max(version, plan.version));
      if (plan.ops.length > 0) {
        const plans = this.unsaved.get(path) ?? [];
        plans.push(plan);
        this.unsaved.set(path, plans);
      }
      if (changed && !wasDirty && !this.saving.has(path)) {
        // nothing of the user's is unsaved (Lab's own metadata at most): keep the notebook
        // clean and its file in step with the run.
        // With unsaved edits the user's own save (or autosave) writes both: a second save
        // racing theirs would be what makes Lab ask "File Changed".
        await this.save(panel);
      }
    } catch (error) {
      trace(`merge of ${path} failed: ${String(error)}`);
      this.retry.add(path);
    } finally {
      this.busy.delete(path);
    }
  }

  /** Whether ``panel``'s cells differ from its file as last loaded or saved (``bases``). */
  private userEdited(panel: NotebookPanel): boolean {
    const now = panel.context.model.toJSON() as unknown as NotebookJson;
    return cellsEdited(this.bases.get(panel)?.cells, now.cells);
  }

  /** Apply a plan; null when the document no longer matches what the plan was made for. */
  private apply(
    panel: NotebookPanel,
    sent: Array<[string | null, string]>,
    plan: MergeAnswer
  ): boolean | null {
    const model = panel.context.model;
    const shared = model.sharedModel;
    if (!opsStillApply(sent, this.view(panel), plan.ops)) {
      return null;
    }
    let changed = false;
    const outputs: PendingOutputs = [];
    shared.transact(() => {
      for (const op of plan.ops) {
        applyOp(panel, op, outputs);
        changed = true;
      }
      for (const [key, value] of Object.entries(plan.metadata)) {
        const current = model.getMetadata(key);
        if (JSON.stringify(current) !== JSON.stringify(value)) {
          model.setMetadata(key, value as never);
          changed = true;
        }
      }
    });
    settleOutputs(shared, outputs);
    return changed;
  }

  /**
   * Save through Lab (the save wrapper merges when the file changed on disk), in turn with
   * every other save of the document, unless the file is gone by then: the user deleted the
   * notebook (its workflow pauses), and a save of ours would bring it back. Their own save
   * (Ctrl-S, autosave) still can.
   */
  private async save(panel: NotebookPanel): Promise<void> {
    const own = this.ownSaves.get(panel);
    await (own ? own() : panel.context.save());
  }

  /** Whether the file at ``path`` exists (false too when the server cannot say). */
  private async stillThere(path: string): Promise<boolean> {
    try {
      await this.docManager.services.contents.get(path, { content: false });
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Before a save: when the file is newer than the version this window stands on (another
   * window saved it, or the server wrote it while nobody held it), take it in -- merged cell
   * by cell with this document (:func:`mergeNotebook`), edited in place (:func:`adoptInPlace`)
   * -- so that Lab's save goes on to write both instead of asking "File Changed". Nothing is
   * replaced under the user: what they type while the file travels stays in the document and
   * goes into the save. ``always``: take the file in whatever its time (a save found it
   * changed). Answers the file taken in, or null.
   */
  private async takeInFile(panel: NotebookPanel, always = false): Promise<NotebookJson | null> {
    const context = panel.context;
    const path = context.path;
    const base = this.bases.get(panel);
    const mine = context.contentsModel?.last_modified;
    if (!base || !mine || context.model.collaborative) {
      return null;
    }
    const file = await this.newerFile(panel, always ? null : mine);
    if (file === null || context.isDisposed || context.path !== path) {
      return null;
    }
    const disk = file.content as NotebookJson;
    const merged = mergeNotebook(base, context.model.toJSON() as unknown as NotebookJson, disk);
    if (!adoptInPlace(context, merged, file)) {
      return null;
    }
    this.bases.set(panel, disk);
    return disk;
  }

  /** The file at ``panel``'s path, with its content and hash, when it is newer than
   *  ``mine`` (a ``last_modified``; null: whatever its time); else null. */
  private async newerFile(
    panel: NotebookPanel,
    mine: string | null
  ): Promise<Contents.IModel | null> {
    const contents = this.docManager.services.contents;
    const path = panel.context.path;
    if (mine !== null) {
      const stat = await contents.get(path, { content: false });
      if (Date.parse(stat.last_modified) <= Date.parse(mine)) {
        return null;
      }
    }
    return contents.get(path, { type: 'notebook', format: 'json', content: true, hash: true });
  }

  /**
   * With jupyter-collaboration the room is the file's only writer: it saves after every change
   * (the workflow's cells included) and tells each window the file's new hash. A window whose
   * notice has not arrived yet when the user saves would compare a stale hash and ask "File
   * Changed" about the room's own save. So before a save, a file the room saved since is
   * announced to the window the way the collaborative drive announces its saves (a ``save``
   * on the contents manager's ``fileChanged``), and Lab's save goes on against that file.
   */
  private async roomSaved(panel: NotebookPanel): Promise<void> {
    const context = panel.context;
    const known = context.contentsModel;
    if (!known) {
      return;
    }
    const contents = this.docManager.services.contents;
    const disk = await contents.get(context.path, { content: false, hash: true });
    const stale =
      disk.hash && known.hash ? disk.hash !== known.hash : disk.last_modified !== known.last_modified;
    if (stale && !context.isDisposed) {
      const signal = contents.fileChanged as unknown as {
        emit(change: Contents.IChangedArgs): void;
      };
      signal.emit({ type: 'save', oldValue: null, newValue: { ...disk, path: known.path } });
    }
  }

  /** Not the writer, or about to merge: a document without edits of the user's cells takes
   *  in a newer file first, in place (:meth:`takeInFile`; Lab's revert would drop what is
   *  typed meanwhile), and is clean again when it then is that file. */
  private async catchUp(panel: NotebookPanel): Promise<void> {
    const context = panel.context;
    if (context.model.collaborative || (context.model.dirty && this.userEdited(panel))) {
      return; // the user's own save merges the file
    }
    const disk = await this.takeInFile(panel);
    if (disk !== null && !context.isDisposed) {
      const now = context.model.toJSON() as unknown as NotebookJson;
      if (
        canonical(now.cells) === canonical(disk.cells) &&
        canonical(now.metadata) === canonical(disk.metadata)
      ) {
        context.model.dirty = false;
      }
    }
  }

  /**
   * One save at a time per document, merged with the file when it changed on disk. Lab checks,
   * before it saves, that the file is the version it last wrote; a second save that starts
   * while the first is still finishing sees the first one's file and asks "File Changed". The
   * co-editor saves too (a clean document stays clean), so every save of the document --
   * Ctrl-S, autosave, ours -- waits for the previous one; and a file another window saved
   * meanwhile is taken in (:meth:`takeInFile`) rather than reported as a conflict.
   */
  private serializeSaves(panel: NotebookPanel): void {
    const context = panel.context;
    const save = context.save.bind(context);
    let previous: Promise<unknown> = Promise.resolve();
    const enqueue = (own: boolean): Promise<void> => {
      const next = previous.then(async () => {
        // ours never recreates a file deleted meanwhile: checked before, by the merge's own
        // look at the file, and once more just before Lab's save
        const gone = (): boolean => own && this.deleted.has(context.path);
        if (gone() || (own && !(await this.stillThere(context.path)))) {
          return;
        }
        try {
          if (context.model.collaborative) {
            await this.roomSaved(panel);
          } else {
            await this.takeInFile(panel);
          }
        } catch (error) {
          if (own && notFound(error)) {
            return;
          }
          // the file could not be taken in: Lab's own save (and its checks) decide
        }
        if (!gone()) {
          const deletes = this.deletes.get(context.path) ?? 0;
          await save();
          if (own && (this.deletes.get(context.path) ?? 0) !== deletes) {
            // the user deleted the file while our save was under way, and the save made it
            // again: delete it again, as they asked
            await this.docManager.services.contents.delete(context.path);
          }
        }
      });
      previous = next.catch(() => undefined);
      return next;
    };
    this.queues.set(panel, {
      tail: () => previous,
      hold: until => {
        previous = previous.then(() => until).catch(() => undefined);
      }
    });
    context.save = (): Promise<void> => enqueue(false);
    this.ownSaves.set(panel, () => enqueue(true));
  }
}

/** Lab's ``[*]`` on the cell the workflow runs now (its ``notebook_bcc.status``), no
 *  marker on the others: the server runs these cells, so this browser never marks them. */
function showRunning(target: unknown, cell: nbformat.ICell): void {
  if (cell.cell_type !== 'code') {
    return;
  }
  const bcc = (cell.metadata ?? {})['notebook_bcc'] as { status?: unknown } | undefined;
  const state = bcc?.status === 'running' ? 'running' : 'idle';
  const code = target as { executionState?: string } | undefined;
  if (code?.executionState !== undefined && code.executionState !== state) {
    code.executionState = state;
  }
}

/** Outputs to give existing code cells once the plan's transaction is over: (id, outputs). */
type PendingOutputs = Array<[string, nbformat.IOutput[]]>;

/** Give existing cells new outputs once the plan's transaction is over, in two more: the
 *  old ones removed, then the new ones added (see ``outputs.ts``). */
function settleOutputs(
  shared: NotebookPanel['context']['model']['sharedModel'],
  pending: PendingOutputs
): void {
  if (pending.length === 0) {
    return;
  }
  const byId = new Map(shared.cells.map(cell => [cell.id, cell]));
  const cells: Array<[CodeOutputs, nbformat.IOutput[]]> = [];
  for (const [id, outputs] of pending) {
    const cell = byId.get(id);
    if (cell && cell.cell_type === 'code') {
      cells.push([cell as unknown as CodeOutputs, outputs]);
    }
  }
  shared.transact(() => clearOutputs(cells.map(([cell]) => cell)));
  shared.transact(() => addOutputs(cells));
}

function applyOp(panel: NotebookPanel, op: CellOp, outputs: PendingOutputs): void {
  const shared = panel.context.model.sharedModel;
  const cell = op.cell as unknown as nbformat.ICell;
  if (op.op === 'insert') {
    // (the inserted cell, not getCell: the cell list is updated when the transaction ends)
    showRunning(shared.insertCell(op.index, { ...cell, id: op.cell_id } as never), cell);
    return;
  }
  const target = shared.getCell(op.index);
  const source = typeof cell.source === 'string' ? cell.source : cell.source.join('');
  if (op.op === 'replace' || target.cell_type !== cell.cell_type) {
    // 'replace': the workflow's first cell takes the place of Lab's blank cell
    shared.deleteCell(op.index);
    showRunning(shared.insertCell(op.index, { ...cell, id: op.cell_id } as never), cell);
    return;
  }
  if (target.getSource() !== source) {
    target.setSource(source);
  }
  target.setMetadata((cell.metadata ?? {}) as never);
  if (cell.cell_type === 'code') {
    const code = target as unknown as CodeOutputs;
    const codeCell = cell as nbformat.ICodeCell;
    const wanted = codeCell.outputs ?? [];
    if (outputsDiffer(code, wanted)) {
      outputs.push([op.cell_id, wanted]);
    }
    const count = codeCell.execution_count ?? null;
    if (code.execution_count !== count) {
      code.execution_count = count;
    }
    showRunning(target, cell);
  }
}
