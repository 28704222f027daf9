/**
 * "All workflows": every workflow the server knows, whatever notebook it belongs to, with its
 * notebook, status in plain words, pending decisions and last activity, and Open / Cancel /
 * Delete. A workflow whose notebook was renamed, moved or deleted is never invisible here.
 */
import type { BccApi } from './api';
import { h, replaceChildren } from './dom';
import { sendWhileMeant } from './resend';
import type { Command, WorkflowSummary } from './types';
import { isReleased, releasedTitle, splitReleased, summaryLine } from './workflowsRule';

/** Run statuses a workflow does not leave: nothing to cancel there (nor to send again). */
const FINISHED: readonly string[] = ['completed', 'cancelled'];

/** How often the open list refreshes itself. */
const REFRESH_MS = 3000;

export interface WorkflowsListServices {
  api: BccApi;
  /** Open a notebook in the main area. */
  open(path: string): void;
  confirm(title: string, body: string, accept: string): Promise<boolean>;
  notify(kind: 'error' | 'info', message: string): void;
}

export class WorkflowsList {
  readonly node: HTMLDetailsElement;
  private readonly listNode: HTMLElement;
  private timer: number | null = null;
  private loading = false;
  private releasedOpen = false;

  constructor(private readonly services: WorkflowsListServices) {
    this.listNode = h('div', { class: 'jp-NotebookBcc-workflowsList' });
    this.node = h(
      'details',
      { class: 'jp-NotebookBcc-section', 'data-testid': 'bcc-workflows' },
      h('summary', { class: 'jp-NotebookBcc-sectionTitle' }, 'All workflows on this server'),
      this.listNode
    );
    this.node.addEventListener('toggle', () => {
      if (this.node.open) {
        void this.refresh();
        this.timer = window.setInterval(() => void this.refresh(), REFRESH_MS);
      } else if (this.timer !== null) {
        window.clearInterval(this.timer);
        this.timer = null;
      }
    });
  }

  dispose(): void {
    if (this.timer !== null) {
      window.clearInterval(this.timer);
    }
  }

  async refresh(): Promise<void> {
    if (this.loading) {
      return;
    }
    this.loading = true;
    try {
      const workflows = await this.services.api.workflows();
      this.show(workflows.slice().reverse()); // newest first
    } catch (error) {
      replaceChildren(
        this.listNode,
        h('p', { class: 'jp-NotebookBcc-muted' }, `Could not list workflows: ${String(error)}`)
      );
    } finally {
      this.loading = false;
    }
  }

  private show(workflows: WorkflowSummary[]): void {
    if (workflows.length === 0) {
      replaceChildren(
        this.listNode,
        h('p', { class: 'jp-NotebookBcc-muted' }, 'No workflow on this server yet.')
      );
      return;
    }
    const { current, released } = splitReleased(workflows);
    const rows: HTMLElement[] = current.map(w => this.row(w));
    if (current.length === 0) {
      rows.push(h('p', { class: 'jp-NotebookBcc-muted' }, 'Every workflow here was deleted or replaced.'));
    }
    if (released.length > 0) {
      // the group keeps its open/closed state across the list's refreshes
      const wasOpen = this.releasedOpen;
      const group = h(
        'details',
        { class: 'jp-NotebookBcc-releasedWorkflows', 'data-testid': 'bcc-workflows-released' },
        h(
          'summary',
          { class: 'jp-NotebookBcc-muted' },
          releasedTitle(released)
        ),
        ...released.map(w => this.row(w))
      ) as HTMLDetailsElement;
      group.open = wasOpen;
      group.addEventListener('toggle', () => {
        this.releasedOpen = group.open;
      });
      rows.push(group);
    }
    replaceChildren(this.listNode, ...rows);
  }

  private row(w: WorkflowSummary): HTMLElement {
    const line = summaryLine(w, new Date());
    const path = w.notebook_path;
    const stoppable = w.live && !FINISHED.includes(w.run_status);
    return h(
      'div',
      {
        class: 'jp-NotebookBcc-workflowRow',
        'data-testid': 'bcc-workflow-row',
        'data-workflow-id': w.workflow_id,
        'data-status': w.run_status,
        'data-version': String(w.version)
      },
      h('div', { class: 'jp-NotebookBcc-workflowNotebook' }, line.notebook),
      h('div', { class: 'jp-NotebookBcc-workflowStatus' }, line.status),
      h('div', { class: 'jp-NotebookBcc-muted' }, line.detail),
      h(
        'div',
        { class: 'jp-NotebookBcc-workflowActions' },
        h(
          'button',
          {
            class: 'jp-Button jp-mod-styled jp-mod-reject',
            'data-testid': 'bcc-workflow-open',
            disabled: path === null,
            title: path === null ? 'The notebook was deleted' : `Open ${path}`,
            onclick: () => path && this.services.open(path)
          },
          'Open'
        ),
        h(
          'button',
          {
            class: 'jp-Button jp-mod-styled jp-mod-reject',
            'data-testid': 'bcc-workflow-cancel',
            disabled: !stoppable,
            onclick: () => void this.cancel(w)
          },
          'Cancel'
        ),
        h(
          'button',
          {
            class: 'jp-Button jp-mod-styled jp-mod-warn',
            'data-testid': 'bcc-workflow-delete',
            disabled: isReleased(w),
            title: isReleased(w)
              ? `${w.released === 'deleted' ? 'Deleted' : 'Replaced'} already: it holds no notebook (its record stays for its trace)`
              : w.live || w.active
                ? 'Stop it and release its notebook'
                : 'Take it out of this list (its record stays for its trace)',
            onclick: () => void this.remove(w)
          },
          'Delete'
        )
      )
    );
  }

  private async cancel(w: WorkflowSummary): Promise<void> {
    const ok = await this.services.confirm(
      'Cancel this workflow?',
      `${w.notebook_path ?? w.workflow_id}: a running cell is interrupted; the notebook keeps its cells.`,
      'Cancel workflow'
    );
    if (!ok) {
      return;
    }
    try {
      // the row may be a commit or two behind a workflow that runs: cancel means the same
      // against the state a 409 brings, while the workflow has not ended
      const cancel = (version: number): Command => ({
        event: 'CANCEL',
        expected_version: version
      });
      await sendWhileMeant(this.services.api, w.workflow_id, cancel(w.version), fresh =>
        FINISHED.includes(fresh.run.status) ? null : cancel(fresh.version)
      );
    } catch (error) {
      this.services.notify('error', `Could not cancel: ${(error as Error).message}`);
    }
    await this.refresh();
  }

  private async remove(w: WorkflowSummary): Promise<void> {
    const ok = await this.services.confirm(
      'Delete this workflow?',
      `${w.notebook_path ?? w.workflow_id}: it stops (a running cell is interrupted) and releases its notebook; the notebook and its cells stay.`,
      'Delete workflow'
    );
    if (!ok) {
      return;
    }
    try {
      await this.services.api.deleteWorkflow(w.workflow_id);
    } catch (error) {
      this.services.notify('error', `Could not delete: ${(error as Error).message}`);
    }
    await this.refresh();
  }
}
