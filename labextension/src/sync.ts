/**
 * Keeps the open notebook in step with the cells the engine writes (D10).
 *
 * A fallback only: while the co-editor (coedit.ts) holds the open notebook the server does not
 * write its file and this stays idle. Otherwise (the hold lapsed, e.g. the server restarted):
 * JupyterLab does not reload a file changed on disk. While a workflow runs, the notebook's
 * modification time on the server is compared with the open document's; when the server's is
 * newer, an unmodified document is reverted (the user sees the cells appear) and a modified
 * one gets a notice with a reload action instead, so the user's edits are never lost
 * silently. A collaborative document (jupyter-collaboration) is synced by its own file
 * watcher and left alone.
 */
import type { IDocumentManager } from '@jupyterlab/docmanager';
import type { DocumentRegistry } from '@jupyterlab/docregistry';

import type { WorkflowPanel } from './panel';
import type { WorkflowEvent, WorkflowSnapshot } from './types';
import { shouldReload } from './syncRule';

/** How often the file is checked while the workflow runs. */
const CHECK_INTERVAL_MS = 1500;
/** Delay after a "cell" event before checking (the server's writer debounces its saves). */
const AFTER_CELL_MS = 400;

export class NotebookSync {
  private interval: number | null = null;
  private pendingCheck: number | null = null;
  private checking = false;
  private disposed = false;

  constructor(
    private readonly panel: WorkflowPanel,
    private readonly docManager: IDocumentManager,
    /** True when the co-editor holds the path: the server does not write its file then. */
    private readonly heldElsewhere: (path: string) => boolean = () => false
  ) {
    panel.snapshotChanged.connect(this.onSnapshot, this);
    panel.eventsReceived.connect(this.onEvents, this);
  }

  dispose(): void {
    this.disposed = true;
    this.stopInterval();
    this.panel.snapshotChanged.disconnect(this.onSnapshot, this);
    this.panel.eventsReceived.disconnect(this.onEvents, this);
  }

  private onSnapshot(_: WorkflowPanel, snapshot: WorkflowSnapshot | null): void {
    if (snapshot && snapshot.run.status === 'running') {
      this.startInterval();
    } else {
      this.stopInterval();
      if (snapshot) {
        this.schedule(AFTER_CELL_MS); // the last cells of a run that just stopped
      }
    }
  }

  private onEvents(_: WorkflowPanel, events: WorkflowEvent[]): void {
    if (events.some(e => e.kind === 'cell')) {
      this.schedule(AFTER_CELL_MS);
    }
  }

  private startInterval(): void {
    if (this.interval === null) {
      this.interval = window.setInterval(() => void this.check(), CHECK_INTERVAL_MS);
    }
  }

  private stopInterval(): void {
    if (this.interval !== null) {
      window.clearInterval(this.interval);
      this.interval = null;
    }
  }

  private schedule(delay: number): void {
    if (this.pendingCheck !== null) {
      return;
    }
    this.pendingCheck = window.setTimeout(() => {
      this.pendingCheck = null;
      void this.check();
    }, delay);
  }

  /** Compare the file on the server with the open document; revert or offer a reload. */
  async check(): Promise<void> {
    const path = this.panel.path;
    if (this.disposed || this.checking || path === null || this.heldElsewhere(path)) {
      return;
    }
    const widget = this.docManager.findWidget(path);
    if (!widget) {
      return;
    }
    const context: DocumentRegistry.Context = widget.context;
    if (!context.isReady || context.model.collaborative) {
      return;
    }
    this.checking = true;
    try {
      const disk = await this.docManager.services.contents.get(path, { content: false });
      const decision = shouldReload(
        disk.last_modified,
        context.contentsModel?.last_modified ?? null,
        context.model.dirty
      );
      if (decision === 'revert') {
        await context.revert();
        this.panel.hideReloadNotice();
      } else if (decision === 'notice') {
        this.panel.showReloadNotice(() => {
          void context.revert().then(() => this.panel.hideReloadNotice());
        });
      } else if (!context.model.dirty) {
        this.panel.hideReloadNotice();
      }
    } catch {
      // the file may be mid-write or gone; the next check tries again
    } finally {
      this.checking = false;
    }
  }
}
