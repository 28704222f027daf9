/**
 * A notebook open with no kernel while its workflow runs on one: started over REST or from
 * another window after the user shut the notebook's kernel down, or resumed by a restarted
 * server. Lab connects a notebook to the session of its path only when it opens the notebook,
 * so the notebook says "No Kernel" while the workflow's variables live elsewhere. The watch
 * notices that on each snapshot and lets the panel offer to connect: the notebook is saved and
 * opened again, and Lab attaches it to its path's session (its own, public way).
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Session } from '@jupyterlab/services';

import type { WorkflowSnapshot } from './types';

/** Run states in which the workflow holds a kernel. */
const HOLDS_KERNEL: ReadonlySet<string> = new Set(['running', 'waiting', 'paused']);

/** What the watch needs from Lab and the panel. */
export interface KernelWatchHost {
  /** The open notebook at ``path``, if any. */
  notebook(path: string): NotebookPanel | undefined;
  /** The server's session for ``path``, if any. */
  sessionOf(path: string): Promise<Session.IModel | undefined>;
  /** Open the notebook at ``path`` in the main area. */
  open(path: string): Promise<void>;
  /** Offer to connect (``connect``), or withdraw the offer (null). */
  offer(connect: (() => void) | null): void;
}

/** Offers to connect an open notebook to the kernel its running workflow uses. */
export class KernelWatch {
  private checking = false;

  constructor(private readonly host: KernelWatchHost) {}

  /** Look again at ``path`` with ``snapshot`` shown (each snapshot the panel shows). */
  async check(path: string | null, snapshot: WorkflowSnapshot | null): Promise<void> {
    const notebook = path ? this.host.notebook(path) : undefined;
    if (notebook && !notebook.sessionContext.isDisposed) {
      // a notebook being opened has no session until Lab has looked for its path's one
      await notebook.sessionContext.ready;
    }
    const unattached =
      path !== null &&
      notebook !== undefined &&
      !notebook.sessionContext.isDisposed &&
      !notebook.sessionContext.session?.kernel &&
      snapshot !== null &&
      HOLDS_KERNEL.has(snapshot.run.status);
    if (!unattached || !path || !notebook) {
      this.host.offer(null);
      return;
    }
    if (this.checking) {
      return;
    }
    this.checking = true;
    try {
      const session = await this.host.sessionOf(path);
      if (session?.kernel && !notebook.sessionContext.session?.kernel) {
        this.host.offer(() => void this.connect(notebook, path));
      }
    } finally {
      this.checking = false;
    }
  }

  /** Save the notebook, close it and open it again: Lab attaches it to its path's session. */
  private async connect(notebook: NotebookPanel, path: string): Promise<void> {
    this.host.offer(null);
    if (notebook.context.model.dirty) {
      await notebook.context.save();
    }
    notebook.close();
    await this.host.open(path);
  }
}
