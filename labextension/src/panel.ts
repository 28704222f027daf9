/**
 * The Workflow side panel: where the active notebook's workflow is, what it did, what it
 * waits for — and the controls to steer it.
 *
 * Plain Lumino widget over plain DOM. The snapshot from the server is the only state that
 * matters (D5); the panel keeps the last one it was shown and sends every command with that
 * snapshot's ``version`` so a stale click is refused (409) instead of acting on old facts.
 */
import type { IMermaidManager } from '@jupyterlab/mermaid';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { ApiError, BccApi } from './api';
import { WorkflowsList } from './workflowsList';
import { ExchangeViews } from './exchanges';
import { stateDetail, statusSentence } from './statusWords';
import { h, keyValueTable, replaceChildren, section } from './dom';
import type { ConnectionMode } from './live';
import { WorkflowFeed } from './live';
import { StartForm } from './start';
import type {
  Command,
  FsmTransition,
  PendingDecision,
  WorkflowEvent,
  WorkflowSnapshot
} from './types';
import {
  DECISION_HINTS,
  DECISION_TITLES,
  STATUS_LABELS,
  TreeNode,
  behaviorView,
  buildTree,
  clock,
  controlViews,
  decisionCode,
  detailRows,
  diffView,
  effectViews,
  eventText,
  historyEvents,
  humanState,
  mergeEvents,
  metricRows,
  progressSummary,
  usageRows,
  dataVariables,
  variableRows,
  type ControlId
} from './view';

/** DOM id of the panel; tests and the shell find the panel by it. */
export const WORKFLOW_PANEL_ID = 'notebook-bcc-workflow-panel';

export type NoticeKind = 'info' | 'conflict' | 'error';

/** What the panel needs from JupyterLab (kept as callbacks so the panel stays testable). */
export interface PanelServices {
  api: BccApi;
  mermaid: IMermaidManager | null;
  /** Ask once before a destructive command; resolves true to go ahead. */
  confirm(title: string, body: string, accept: string): Promise<boolean>;
  /** Pick a file under the server root (the file dialog); null when cancelled. */
  browse(title: string): Promise<string | null>;
  /** Called before a workflow starts on ``path`` (saves unsaved edits, D19). */
  beforeStart(path: string): Promise<void>;
  /** Show ``figure`` at full size in the main area (the side panel is too narrow for it). */
  openFigure(title: string, figure: HTMLElement): void;
  /** Open a notebook in the main area (the workflows list's Open). */
  openNotebook?(path: string): void;
}

/** How often the panel looks for a workflow started elsewhere (CLI, REST, another tab). */
const DISCOVER_INTERVAL_MS = 4000;

export class WorkflowPanel extends Widget {
  private notebookPath: string | null = null;
  private feed: WorkflowFeed | null = null;
  private _snapshot: WorkflowSnapshot | null = null;
  private timeline: WorkflowEvent[] = [];
  private transitions: FsmTransition[] = [];
  /** Step titles seen in this workflow's snapshots: a completed stage records ids only. */
  private stepTitles = new Map<string, string>();
  private mode: ConnectionMode = 'offline';
  private readonly openState = new Map<string, boolean>();
  private diagramMachine: 'fsm' | 'stages' = 'fsm';
  private diagramKey = '';
  private busy = false;
  private discoverTimer: number | null = null;
  private startForm: StartForm | null = null;
  private readonly headerNode: HTMLElement;
  private readonly noticeNode: HTMLElement;
  private readonly reloadNode: HTMLElement;
  private readonly formNode: HTMLElement;
  private readonly bodyNode: HTMLElement;
  private readonly diagramNode: HTMLElement;
  private _snapshotChanged = new Signal<this, WorkflowSnapshot | null>(this);
  private _eventsReceived = new Signal<this, WorkflowEvent[]>(this);
  private reloadAction: (() => void) | null = null;
  private readonly workflowsList: WorkflowsList;
  private readonly exchanges: ExchangeViews;

  constructor(private readonly services: PanelServices) {
    super();
    this.id = WORKFLOW_PANEL_ID;
    this.addClass('jp-NotebookBcc-WorkflowPanel');
    this.title.label = 'Workflow';
    this.title.caption = 'notebook-bcc workflow';
    this.headerNode = h('div', { class: 'jp-NotebookBcc-header' });
    this.noticeNode = h('div', { class: 'jp-NotebookBcc-notices', 'aria-live': 'polite' });
    this.reloadNode = h('div', { class: 'jp-NotebookBcc-reloadArea' });
    this.formNode = h('div', { class: 'jp-NotebookBcc-formArea' });
    this.bodyNode = h('div', { class: 'jp-NotebookBcc-body' });
    this.diagramNode = h('div', { class: 'jp-NotebookBcc-diagramBody' });
    this.exchanges = new ExchangeViews(services.api);
    this.workflowsList = new WorkflowsList({
      api: services.api,
      open: path => services.openNotebook?.(path),
      confirm: (title, body, accept) => services.confirm(title, body, accept),
      notify: (kind, message) => this.notify(kind, message)
    });
    this.node.append(
      this.headerNode,
      this.noticeNode,
      this.reloadNode,
      this.formNode,
      this.bodyNode,
      this.workflowsList.node
    );
    void services.api
      .fsm()
      .then(doc => {
        this.transitions = doc.transitions;
        this.render();
      })
      .catch(() => undefined);
    this.render();
  }

  /** The snapshot shown now (null: no workflow for the active notebook). */
  get snapshot(): WorkflowSnapshot | null {
    return this._snapshot;
  }

  get path(): string | null {
    return this.notebookPath;
  }

  /** Emitted whenever the shown snapshot changes (the notebook sync and commands listen). */
  get snapshotChanged(): ISignal<this, WorkflowSnapshot | null> {
    return this._snapshotChanged;
  }

  /** D4 events from the live stream. */
  get eventsReceived(): ISignal<this, WorkflowEvent[]> {
    return this._eventsReceived;
  }

  override dispose(): void {
    this.stopFeed();
    this.stopDiscovery();
    super.dispose();
  }

  // -- which workflow ------------------------------------------------------------------

  /** Follow the workflow of the notebook at ``path`` (null: no notebook is active). */
  async setNotebook(path: string | null): Promise<void> {
    if (path === this.notebookPath && (this.feed || path === null)) {
      return;
    }
    this.notebookPath = path;
    this.stopFeed();
    this.setSnapshot(null);
    this.timeline = [];
    this.hideReloadNotice();
    this.closeStartForm();
    await this.discover();
  }

  /**
   * The shown notebook was renamed or moved (Lab's rename, "Rename and Save", a move in the
   * file browser): the server re-keys its workflow to the new path, so keep following it.
   */
  notebookRenamed(oldPath: string, newPath: string): void {
    if (this.notebookPath !== oldPath) {
      return;
    }
    this.notebookPath = newPath;
    if (!this.feed) {
      void this.discover();
      return;
    }
    this.render();
  }

  /** Find the notebook's workflow (the active one, else its latest) and follow it. */
  async discover(): Promise<void> {
    const path = this.notebookPath;
    if (path === null) {
      this.stopDiscovery();
      this.render();
      return;
    }
    let found: string | null = null;
    try {
      const workflows = await this.services.api.workflows(path);
      const mine = workflows.filter(w => w.notebook_path === path);
      const chosen = mine.find(w => w.active) ?? mine[mine.length - 1];
      found = chosen ? chosen.workflow_id : null;
    } catch (error) {
      this.notify('error', `Could not list workflows: ${(error as Error).message}`);
    }
    if (path !== this.notebookPath) {
      return;
    }
    if (found) {
      this.stopDiscovery();
      this.follow(found);
    } else {
      this.render();
      this.scheduleDiscovery();
    }
  }

  /** Follow ``workflowId`` live (after a start, or when discovered). */
  follow(workflowId: string, snapshot?: WorkflowSnapshot): void {
    if (this.feed?.workflowId === workflowId) {
      if (snapshot) {
        this.setSnapshot(snapshot);
      }
      return;
    }
    this.stopFeed();
    this.timeline = [];
    this.stepTitles = new Map();
    const feed = new WorkflowFeed(this.services.api, workflowId);
    this.feed = feed;
    feed.snapshot.connect((_, snap) => this.setSnapshot(snap));
    feed.events.connect((_, events) => {
      this.timeline = mergeEvents(this.timeline, events);
      this._eventsReceived.emit(events);
    });
    feed.modeChanged.connect((_, mode) => {
      this.mode = mode;
      this.renderHeader();
    });
    if (snapshot) {
      this.setSnapshot(snapshot);
    }
    feed.start();
  }

  private stopFeed(): void {
    if (this.feed) {
      this.feed.dispose();
      this.feed = null;
    }
    this.mode = 'offline';
  }

  private scheduleDiscovery(): void {
    if (this.discoverTimer !== null || this.isDisposed) {
      return;
    }
    this.discoverTimer = window.setTimeout(() => {
      this.discoverTimer = null;
      if (!this._snapshot && this.notebookPath !== null) {
        void this.discover();
      }
    }, DISCOVER_INTERVAL_MS);
  }

  private stopDiscovery(): void {
    if (this.discoverTimer !== null) {
      window.clearTimeout(this.discoverTimer);
      this.discoverTimer = null;
    }
  }

  private setSnapshot(snapshot: WorkflowSnapshot | null): void {
    const previous = this._snapshot;
    if (
      snapshot &&
      previous &&
      snapshot.workflow_id === previous.workflow_id &&
      snapshot.version < previous.version
    ) {
      return; // a late answer: never go back in time
    }
    this._snapshot = snapshot;
    if (snapshot) {
      const { steps } = snapshot.location.progress;
      for (const step of [...steps.completed, ...(steps.current ? [steps.current] : []), ...steps.remaining]) {
        if (step.title?.trim()) {
          this.stepTitles.set(step.id, step.title.trim());
        }
      }
    }
    if (snapshot && this.timeline.length === 0) {
      this.timeline = historyEvents(snapshot);
    }
    this.render();
    this._snapshotChanged.emit(snapshot);
  }

  // -- notices -------------------------------------------------------------------------

  /** Show a short notice; info notices fade after a while, others stay until dismissed. */
  notify(kind: NoticeKind, message: string): void {
    const dismiss = h(
      'button',
      {
        class: 'jp-NotebookBcc-noticeClose',
        'aria-label': 'Dismiss',
        title: 'Dismiss',
        onclick: () => notice.remove()
      },
      '×'
    );
    const notice = h(
      'div',
      {
        class: `jp-NotebookBcc-notice jp-NotebookBcc-notice-${kind}`,
        'data-testid': 'bcc-notice',
        'data-kind': kind,
        role: kind === 'info' ? 'status' : 'alert'
      },
      h('span', { class: 'jp-NotebookBcc-noticeText' }, message),
      dismiss
    );
    replaceChildren(this.noticeNode, notice);
    if (kind === 'info') {
      window.setTimeout(() => notice.remove(), 8000);
    }
  }

  /** The notebook on disk changed while the user has unsaved edits: offer a reload (D10). */
  showReloadNotice(reload: () => void): void {
    this.reloadAction = reload;
    if (this.reloadNode.firstChild) {
      return;
    }
    replaceChildren(
      this.reloadNode,
      h(
        'div',
        {
          class: 'jp-NotebookBcc-notice jp-NotebookBcc-notice-info',
          'data-testid': 'bcc-reload-notice',
          role: 'status'
        },
        h(
          'span',
          { class: 'jp-NotebookBcc-noticeText' },
          'The workflow added cells to this notebook, but it has unsaved edits. Save to ' +
            'keep both (your cells are merged), or reload to see the workflow’s version.'
        ),
        h(
          'button',
          {
            class: 'jp-NotebookBcc-button',
            'data-testid': 'bcc-reload',
            onclick: () => this.reloadAction?.()
          },
          'Reload'
        )
      )
    );
  }

  hideReloadNotice(): void {
    this.reloadAction = null;
    replaceChildren(this.reloadNode);
  }

  get reloadNoticeShown(): boolean {
    return this.reloadNode.firstChild !== null;
  }

  // -- commands ------------------------------------------------------------------------

  /**
   * Send a D3 command based on the snapshot shown; 409 re-renders, 400 explains.
   *
   * ``stillMeant`` is for commands whose meaning does not depend on what the user saw
   * (pause, cancel of a workflow that keeps moving): given the fresh snapshot of a 409, it
   * returns the command to send once more against it, or null when the command no longer
   * applies.
   */
  async send(
    command: Command,
    what: string,
    stillMeant?: (fresh: WorkflowSnapshot) => Command | null
  ): Promise<boolean> {
    const snapshot = this._snapshot;
    if (!snapshot || this.busy) {
      return false;
    }
    this.busy = true;
    this.render();
    try {
      let fresh: WorkflowSnapshot;
      try {
        fresh = await this.services.api.command(snapshot.workflow_id, command);
      } catch (error) {
        const again =
          error instanceof ApiError && error.status === 409 && error.snapshot && stillMeant
            ? stillMeant(error.snapshot)
            : null;
        if (!again) {
          throw error;
        }
        fresh = await this.services.api.command(snapshot.workflow_id, again);
      }
      this.setSnapshot(fresh);
      this.notify('info', `${what}: done.`);
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        const fresh = error.snapshot;
        if (fresh) {
          this.setSnapshot(fresh);
        } else {
          await this.feed?.refresh();
        }
        this.notify(
          'conflict',
          `${what}: the workflow changed since you looked at it (someone or something ` +
            'acted first). The panel now shows its current state; check it and try again.'
        );
      } else if (error instanceof ApiError) {
        this.notify('error', `${what}: ${error.body.message}`);
      } else {
        this.notify('error', `${what}: ${String(error)}`);
      }
      return false;
    } finally {
      this.busy = false;
      this.render();
    }
  }

  /**
   * A control button (run, pause, cancel, ...); destructive ones ask once. The version sent
   * is the one on screen when the user acted: after the dialog for the destructive ones,
   * since the workflow may have moved while it was open.
   */
  async control(id: ControlId): Promise<boolean> {
    if (!this._snapshot) {
      return false;
    }
    const shown = (): number => this._snapshot?.version ?? 0;
    // Pause and cancel mean the same whatever the workflow did meanwhile: if it moved on
    // between the click and the server, send them once more while they still apply.
    const whileOffered =
      (make: (version: number) => Command) =>
      (fresh: WorkflowSnapshot): Command | null =>
        controlViews(fresh, this.transitions).some(c => c.id === id && c.enabled)
          ? make(fresh.version)
          : null;
    switch (id) {
      case 'run':
        return this.send({ action: 'run', expected_version: shown() }, 'Run');
      case 'pause': {
        const pause = (v: number): Command => ({ action: 'pause', expected_version: v });
        return this.send(pause(shown()), 'Pause', whileOffered(pause));
      }
      case 'cancel': {
        const ok = await this.services.confirm(
          'Cancel the workflow?',
          'The running cell finishes, then the workflow stops for good. Its notebook and ' +
            'record stay; a reset makes it startable again.',
          'Cancel workflow'
        );
        const cancel = (v: number): Command => ({ event: 'CANCEL', expected_version: v });
        return ok && this.send(cancel(shown()), 'Cancel', whileOffered(cancel));
      }
      case 'reset': {
        const ok = await this.services.confirm(
          'Reset the workflow?',
          'The workflow goes back to idle and plans again from the start. Cells already ' +
            'in the notebook stay.',
          'Reset'
        );
        return ok && this.send({ event: 'RESET', expected_version: shown() }, 'Reset');
      }
      case 'restart':
        return this.send({ action: 'restart', expected_version: shown() }, 'Start over');
      case 'retry':
        return this.send({ action: 'retry', expected_version: shown() }, 'Retry');
    }
  }

  /** Approve or reject a pending decision (the first one when ``id`` is omitted). */
  async decide(decision: 'approve' | 'reject', id?: string): Promise<boolean> {
    const snapshot = this._snapshot;
    const pending = snapshot?.run.pending ?? [];
    const target = id ? pending.find(p => p.id === id) : pending[0];
    if (!snapshot || !target) {
      this.notify('error', 'There is no pending decision to answer.');
      return false;
    }
    const verb = decision === 'approve' ? 'Approve' : 'Reject';
    return this.send(
      { decide: target.id, decision, expected_version: snapshot.version },
      `${verb} ${DECISION_TITLES[target.kind].toLowerCase()}`
    );
  }

  // -- start ---------------------------------------------------------------------------

  /** Open the start form for the active notebook. */
  openStartForm(): void {
    const path = this.notebookPath;
    if (path === null) {
      this.notify('error', 'Open a notebook first: a workflow runs in a notebook.');
      return;
    }
    if (!this.startForm) {
      this.startForm = new StartForm({
        api: this.services.api,
        notebookPath: path,
        browse: title => this.services.browse(title),
        onCancel: () => this.closeStartForm(),
        onSubmit: async body => {
          await this.services.beforeStart(path);
          const snapshot = await this.services.api.create(body);
          this.closeStartForm();
          this.stopDiscovery();
          this.follow(snapshot.workflow_id, snapshot);
          this.notify('info', `Workflow ${snapshot.workflow_id} started.`);
        }
      });
      replaceChildren(this.formNode, this.startForm.node);
    }
    this.startForm.focus();
    this.render();
  }

  closeStartForm(): void {
    this.startForm = null;
    replaceChildren(this.formNode);
    this.render();
  }

  // -- rendering -----------------------------------------------------------------------

  private render(): void {
    const focused = this.rememberFocus();
    this.renderHeader();
    const snapshot = this._snapshot;
    if (!snapshot) {
      replaceChildren(this.bodyNode, this.renderEmpty());
    } else {
      replaceChildren(
        this.bodyNode,
        this.renderControls(snapshot),
        this.renderDecisions(snapshot),
        this.renderProgress(snapshot),
        this.renderTree(snapshot),
        this.renderBehavior(snapshot),
        this.renderEffects(snapshot),
        this.renderVariables(snapshot),
        this.renderTimeline(),
        this.renderUsage(snapshot),
        this.renderDiagram(snapshot)
      );
    }
    this.restoreFocus(focused);
  }

  private rememberFocus(): string | null {
    const active = document.activeElement;
    if (!active || !this.bodyNode.contains(active)) {
      return null;
    }
    const testid = active.getAttribute('data-testid');
    if (!testid) {
      return null;
    }
    const owner = active.closest('[data-decision-id]');
    const id = owner?.getAttribute('data-decision-id');
    return id ? `[data-decision-id="${CSS.escape(id)}"] [data-testid="${testid}"]` : `[data-testid="${testid}"]`;
  }

  private restoreFocus(selector: string | null): void {
    if (selector) {
      const target = this.bodyNode.querySelector<HTMLElement>(selector);
      target?.focus();
    }
  }

  private renderHeader(): void {
    const snapshot = this._snapshot;
    const name = this.notebookPath ? this.notebookPath.split('/').pop() ?? '' : '';
    if (!snapshot) {
      replaceChildren(
        this.headerNode,
        h('div', { class: 'jp-NotebookBcc-title' }, name || 'No notebook')
      );
      return;
    }
    const status = snapshot.run.status;
    const badge = h(
      'span',
      {
        class: `jp-NotebookBcc-badge jp-NotebookBcc-status-${status}`,
        'data-testid': 'bcc-badge',
        'data-status': status,
        'data-state': snapshot.fsm.state,
        title: `Run status: ${STATUS_LABELS[status]}`
      },
      STATUS_LABELS[status]
    );
    const connection = h(
      'span',
      {
        class: `jp-NotebookBcc-connection jp-NotebookBcc-connection-${this.mode}`,
        'data-testid': 'bcc-connection',
        'data-mode': this.mode,
        title:
          this.mode === 'live'
            ? 'Live: updates stream from the server'
            : this.mode === 'polling'
              ? 'Polling: the live stream is unavailable, the panel refreshes every 2 s'
              : 'Offline: reconnecting…'
      },
      this.mode === 'live' ? 'live' : this.mode === 'polling' ? 'polling' : 'offline'
    );
    const canStartAnother =
      status === 'completed' || status === 'cancelled' || status === 'failed';
    replaceChildren(
      this.headerNode,
      h(
        'div',
        { class: 'jp-NotebookBcc-titleRow' },
        h('div', { class: 'jp-NotebookBcc-title', title: this.notebookPath ?? '' }, name),
        connection
      ),
      h(
        'div',
        { class: 'jp-NotebookBcc-statusRow' },
        badge,
        canStartAnother && !this.startForm
          ? h(
              'button',
              {
                class: 'jp-NotebookBcc-button jp-NotebookBcc-linkButton',
                'data-testid': 'bcc-start',
                title: 'Start a new workflow on this notebook',
                onclick: () => this.openStartForm()
              },
              'New workflow…'
            )
          : null
      ),
      // what the run does or needs, in words; the FSM state in a details line below it
      h(
        'div',
        { class: 'jp-NotebookBcc-reason', 'data-testid': 'bcc-reason' },
        statusSentence(snapshot)
      ),
      h(
        'div',
        { class: 'jp-NotebookBcc-state', 'data-testid': 'bcc-state' },
        stateDetail(snapshot)
      )
    );
  }

  private renderEmpty(): HTMLElement {
    if (this.notebookPath === null) {
      return h(
        'div',
        { class: 'jp-NotebookBcc-empty', 'data-testid': 'bcc-empty' },
        h('p', {}, 'Open a notebook to see its workflow.'),
        h(
          'p',
          { class: 'jp-NotebookBcc-hint' },
          'A workflow plans stages, steps and actions, runs them as cells of the notebook ' +
            'and shows here what it did and what it waits for.'
        )
      );
    }
    return h(
      'div',
      { class: 'jp-NotebookBcc-empty', 'data-testid': 'bcc-empty' },
      h('p', {}, 'No workflow runs on this notebook yet.'),
      this.startForm
        ? null
        : h(
        'p',
        { class: 'jp-NotebookBcc-hint' },
        'Start one from a YAML blueprint or a planner: here, with the command ' +
          '“Start a workflow…” in the palette, or from a terminal with ' +
          '“notebook-bcc run BLUEPRINT --notebook ' +
          this.notebookPath +
          '”.'
          ),
      this.startForm
        ? null
        : h(
            'button',
            {
              class: 'jp-NotebookBcc-button jp-mod-styled jp-mod-accept',
              'data-testid': 'bcc-start',
              onclick: () => this.openStartForm()
            },
            'Start a workflow…'
          )
    );
  }

  private renderControls(snapshot: WorkflowSnapshot): HTMLElement {
    const buttons = controlViews(snapshot, this.transitions).map(control =>
      h(
        'button',
        {
          class: `jp-NotebookBcc-button${control.destructive ? ' jp-NotebookBcc-destructive' : ''}`,
          'data-testid': `bcc-${control.id}`,
          title: control.title,
          'aria-label': control.title,
          disabled: !control.enabled || this.busy,
          onclick: () => void this.control(control.id)
        },
        control.label
      )
    );
    return h(
      'div',
      { class: 'jp-NotebookBcc-controls', role: 'toolbar', 'data-testid': 'bcc-controls' },
      ...buttons
    );
  }

  private renderDecisions(snapshot: WorkflowSnapshot): HTMLElement | null {
    const pending = snapshot.run.pending;
    if (!pending.length) {
      return null;
    }
    return h(
      'div',
      { class: 'jp-NotebookBcc-decisions', 'data-testid': 'bcc-decisions' },
      h(
        'div',
        { class: 'jp-NotebookBcc-sectionHeading' },
        pending.length === 1 ? 'Waiting for your decision' : `${pending.length} decisions wait for you`
      ),
      ...pending.map(decision => this.renderDecision(decision, snapshot))
    );
  }

  private renderDecision(decision: PendingDecision, snapshot: WorkflowSnapshot): HTMLElement {
    const [approveHint, rejectHint] = DECISION_HINTS[decision.kind];
    const diff = diffView(decision.details);
    const code = decisionCode(decision);
    const rows = detailRows(decision);
    // A stage confirmation asks to review what the stage produced: its latest outputs.
    const review =
      decision.kind === 'stage_confirmation' ? effectViews(snapshot, 3).filter(e => e.text) : [];
    return h(
      'div',
      {
        class: 'jp-NotebookBcc-decision',
        'data-testid': 'bcc-decision',
        'data-kind': decision.kind,
        'data-decision-id': decision.id
      },
      h('div', { class: 'jp-NotebookBcc-decisionTitle' }, DECISION_TITLES[decision.kind]),
      h('div', { class: 'jp-NotebookBcc-decisionMessage' }, decision.message),
      diff
        ? h(
            'div',
            { class: 'jp-NotebookBcc-diff', 'data-testid': 'bcc-diff' },
            diff.sections.length
              ? null
              : h('div', { class: 'jp-NotebookBcc-hint' }, `No change to the ${diff.level}.`),
            ...diff.sections.map(s =>
              h(
                'div',
                {
                  class: `jp-NotebookBcc-diffSection jp-NotebookBcc-diff-${s.label.toLowerCase()}`
                },
                h('span', { class: 'jp-NotebookBcc-diffLabel' }, `${s.label} ${diff.level}:`),
                h('ul', {}, ...s.items.map(item => h('li', {}, item)))
              )
            )
          )
        : null,
      code ? h('pre', { class: 'jp-NotebookBcc-code' }, code) : null,
      review.length
        ? h(
            'div',
            { class: 'jp-NotebookBcc-review', 'data-testid': 'bcc-review' },
            h('div', { class: 'jp-NotebookBcc-hint' }, 'Latest output of the stage'),
            ...review.map(e =>
              h(
                'pre',
                { class: `jp-NotebookBcc-effect${e.error ? ' jp-NotebookBcc-effectError' : ''}` },
                e.text
              )
            )
          )
        : null,
      rows.length ? keyValueTable(rows) : null,
      h(
        'div',
        { class: 'jp-NotebookBcc-decisionButtons' },
        h(
          'button',
          {
            class: 'jp-NotebookBcc-button jp-mod-styled jp-mod-accept',
            'data-testid': 'bcc-approve',
            title: approveHint,
            disabled: this.busy,
            onclick: () => void this.decide('approve', decision.id)
          },
          'Approve'
        ),
        h(
          'button',
          {
            class: 'jp-NotebookBcc-button jp-mod-styled',
            'data-testid': 'bcc-reject',
            title: rejectHint,
            disabled: this.busy,
            onclick: () => void this.decide('reject', decision.id)
          },
          'Reject'
        )
      )
    );
  }

  private renderProgress(snapshot: WorkflowSnapshot): HTMLElement {
    const p = progressSummary(snapshot);
    const overall = snapshot.metrics.overall_progress ?? (p.stagesTotal ? p.stagesDone / p.stagesTotal : 0);
    const bar = h(
      'div',
      {
        class: 'jp-NotebookBcc-bar',
        role: 'progressbar',
        'aria-valuemin': 0,
        'aria-valuemax': 100,
        'aria-valuenow': Math.round(overall * 100)
      },
      h('div', { class: 'jp-NotebookBcc-barFill', style: `width: ${Math.round(overall * 100)}%` })
    );
    const line = [`Stages ${p.stagesDone} / ${p.stagesTotal}`];
    if (p.currentStage) {
      line.push(`steps ${p.stepsDone} / ${p.stepsTotal} in “${p.currentStage}”`);
    }
    return h(
      'div',
      { class: 'jp-NotebookBcc-progress', 'data-testid': 'bcc-progress' },
      bar,
      h('div', { class: 'jp-NotebookBcc-progressText' }, line.join(' · ')),
      section(
        'metrics',
        'Metrics',
        this.openState,
        false,
        'bcc-metrics',
        keyValueTable(metricRows(snapshot.metrics))
      )
    );
  }

  private renderTree(snapshot: WorkflowSnapshot): HTMLElement {
    const tree = buildTree(snapshot, this.stepTitles);
    const goals = snapshot.location.goals;
    return section(
      'plan',
      'Plan',
      this.openState,
      true,
      'bcc-plan',
      goals ? h('div', { class: 'jp-NotebookBcc-goal' }, goals) : null,
      tree.length
        ? h(
            'ul',
            { class: 'jp-NotebookBcc-tree', 'data-testid': 'bcc-tree', role: 'tree' },
            ...tree.map((stage, index) => this.renderNode(stage, 'stage', `stage:${index}:${stage.id}`))
          )
        : h(
            'div',
            { class: 'jp-NotebookBcc-hint', 'data-testid': 'bcc-tree' },
            'The planner has not planned any stage yet.'
          )
    );
  }

  private renderNode(item: TreeNode, level: 'stage' | 'step' | 'behavior', key: string): HTMLElement {
    const mark =
      item.status === 'completed'
        ? item.completion === 'failed'
          ? '✗'
          : item.completion === 'skipped'
            ? '↷'
            : '✓'
        : item.status === 'current'
          ? '▶'
          : '○';
    const bits: string[] = [];
    if (item.iteration && item.iteration > 1) {
      bits.push(level === 'stage' ? `visit ${item.iteration}` : `iteration ${item.iteration}`);
    } else if (level === 'behavior' && item.status === 'current' && item.iteration) {
      bits.push(`iteration ${item.iteration}`);
    }
    if (item.completion && item.completion !== 'success') {
      bits.push(item.completion);
    }
    const label = h(
      'span',
      { class: 'jp-NotebookBcc-nodeLabel' },
      h('span', { class: 'jp-NotebookBcc-mark', 'aria-hidden': 'true' }, mark),
      h('span', { class: 'jp-NotebookBcc-nodeTitle', title: item.id }, item.title),
      bits.length ? h('span', { class: 'jp-NotebookBcc-nodeMeta' }, bits.join(', ')) : null
    );
    const about: Array<[string, string]> = [];
    if (item.goal) {
      about.push(['Goal', item.goal]);
    }
    if (item.focus) {
      about.push(['Focus', item.focus]);
    }
    about.push(...item.pcs);
    const exchange =
      level === 'behavior' && this._snapshot ? this.exchanges.section(this._snapshot, item.id, key) : null;
    const hasBody = about.length > 0 || item.children.length > 0 || exchange !== null;
    const childLevel = level === 'stage' ? 'step' : 'behavior';
    const children = item.children.length
      ? h(
          'ul',
          { class: 'jp-NotebookBcc-subtree', role: 'group' },
          ...item.children.map((child, index) =>
            this.renderNode(child, childLevel, `${key}/${index}:${child.id}`)
          )
        )
      : null;
    const attrs = {
      class: `jp-NotebookBcc-node jp-NotebookBcc-node-${item.status}`,
      // "bcc-behavior" is the current-behavior section; tree nodes are "bcc-tree-*".
      'data-testid': level === 'behavior' ? 'bcc-tree-behavior' : `bcc-${level}`,
      [`data-${level}-id`]: item.id,
      'data-status': item.status,
      role: 'treeitem'
    };
    if (!hasBody) {
      return h('li', attrs, h('div', { class: 'jp-NotebookBcc-leaf' }, label));
    }
    // Open while current, closed otherwise -- unless the user chose: only their choices are
    // remembered, so a stage that completes folds away by itself.
    const byDefault = item.status === 'current';
    const open = this.openState.get(key) ?? byDefault;
    const details = h(
      'details',
      { open },
      h('summary', {}, label),
      about.length ? keyValueTable(about) : null,
      children,
      exchange
    );
    details.addEventListener('toggle', () => {
      if (details.open === byDefault) {
        this.openState.delete(key);
      } else {
        this.openState.set(key, details.open);
      }
    });
    return h('li', attrs, details);
  }

  private renderBehavior(snapshot: WorkflowSnapshot): HTMLElement | null {
    const view = behaviorView(snapshot);
    const gaps = snapshot.gaps;
    if (!view && !gaps.length) {
      return null;
    }
    const body: Array<HTMLElement | null> = [];
    if (view) {
      const about: Array<[string, string]> = [];
      about.push(['Behavior', view.title + (view.iteration ? ` (iteration ${view.iteration})` : '')]);
      if (view.agent) {
        about.push(['Agent', view.agent]);
      }
      if (view.task) {
        about.push(['Task', view.task]);
      }
      for (const [name, description] of view.inputs) {
        about.push([`Input ${name}`, description]);
      }
      body.push(keyValueTable(about));
      body.push(this.exchanges.section(snapshot, view.id, 'behavior-section'));
      if (view.artifacts.length) {
        body.push(
          h('div', { class: 'jp-NotebookBcc-subheading' }, 'Expected artifacts'),
          h(
            'ul',
            { class: 'jp-NotebookBcc-checks' },
            ...view.artifacts.map(a =>
              h(
                'li',
                {
                  'data-testid': 'bcc-artifact',
                  'data-present': String(a.present),
                  class: a.present ? 'jp-NotebookBcc-ok' : 'jp-NotebookBcc-missing',
                  title: a.description ?? ''
                },
                h('span', { class: 'jp-NotebookBcc-mark', 'aria-hidden': 'true' }, a.present ? '✓' : '○'),
                h('code', {}, a.name),
                a.present ? '' : ' — missing'
              )
            )
          )
        );
      }
      if (view.criteria.length) {
        body.push(
          h('div', { class: 'jp-NotebookBcc-subheading' }, 'Acceptance criteria'),
          h(
            'ul',
            { class: 'jp-NotebookBcc-checks' },
            ...view.criteria.map(c =>
              h(
                'li',
                {
                  'data-testid': 'bcc-criterion',
                  'data-result': c.result,
                  class: `jp-NotebookBcc-result-${c.result}`,
                  title: c.message ?? c.result
                },
                h(
                  'span',
                  { class: 'jp-NotebookBcc-mark', 'aria-hidden': 'true' },
                  c.result === 'pass' ? '✓' : c.result === 'fail' ? '✗' : c.result === 'error' ? '!' : '…'
                ),
                h('code', {}, c.expression),
                c.message ? h('span', { class: 'jp-NotebookBcc-hint' }, ` ${c.message}`) : null
              )
            )
          )
        );
      }
    }
    if (gaps.length) {
      body.push(
        h(
          'div',
          { class: 'jp-NotebookBcc-gaps', 'data-testid': 'bcc-gaps' },
          h('div', { class: 'jp-NotebookBcc-subheading' }, 'Missing variables'),
          h(
            'ul',
            {},
            ...gaps.map(g =>
              h('li', {}, h('code', {}, g.variable), ` needed by ${g.level} ${g.owner_id}`)
            )
          )
        )
      );
    }
    const title = view ? (view.running ? 'Current behavior' : 'Last behavior') : 'Gaps';
    return section('behavior', title, this.openState, true, 'bcc-behavior', ...body);
  }

  private renderEffects(snapshot: WorkflowSnapshot): HTMLElement {
    const effects = effectViews(snapshot);
    return section(
      'effects',
      'Latest outputs',
      this.openState,
      true,
      'bcc-effects',
      effects.length
        ? h(
            'div',
            { class: 'jp-NotebookBcc-effects' },
            ...effects.map(e =>
              h(
                'pre',
                {
                  class: `jp-NotebookBcc-effect${e.error ? ' jp-NotebookBcc-effectError' : ''}`,
                  'data-error': String(e.error)
                },
                e.text
              )
            )
          )
        : h('div', { class: 'jp-NotebookBcc-hint' }, 'No output yet.')
    );
  }

  private renderVariables(snapshot: WorkflowSnapshot): HTMLElement {
    const { data, hidden } = dataVariables(snapshot.variables);
    const rows = variableRows(data);
    return section(
      'variables',
      `Variables (${rows.length})`,
      this.openState,
      false,
      'bcc-variables',
      hidden
        ? h(
            'div',
            { class: 'jp-NotebookBcc-hint' },
            `Not listed: ${hidden} code object${hidden === 1 ? '' : 's'} (functions, classes, modules).`
          )
        : null,
      rows.length
        ? h(
            'table',
            { class: 'jp-NotebookBcc-table jp-NotebookBcc-varTable' },
            h('thead', {}, h('tr', {}, h('th', {}, 'Name · type · shape'), h('th', {}, 'Value'))),
            h(
              'tbody',
              {},
              ...rows.map(r =>
                h(
                  'tr',
                  { 'data-testid': 'bcc-variable', 'data-name': r.name },
                  h(
                    'td',
                    { title: r.name },
                    h('code', {}, r.name),
                    h(
                      'div',
                      { class: 'jp-NotebookBcc-varMeta' },
                      r.shape ? `${r.type} · ${r.shape}` : r.type
                    )
                  ),
                  h('td', { title: r.value }, r.value)
                )
              )
            )
          )
        : h('div', { class: 'jp-NotebookBcc-hint' }, 'The kernel holds no variables yet.')
    );
  }

  private renderTimeline(): HTMLElement {
    const events = this.timeline.slice(-40).reverse();
    return section(
      'timeline',
      'Timeline',
      this.openState,
      false,
      'bcc-timeline',
      events.length
        ? h(
            'ol',
            { class: 'jp-NotebookBcc-timeline' },
            ...events.map(e =>
              h(
                'li',
                {
                  'data-testid': 'bcc-event',
                  'data-event': e.kind,
                  class: `jp-NotebookBcc-event jp-NotebookBcc-event-${e.kind}`
                },
                h('span', { class: 'jp-NotebookBcc-clock' }, clock(e.at)),
                h('span', { class: 'jp-NotebookBcc-eventText' }, eventText(e))
              )
            )
          )
        : h('div', { class: 'jp-NotebookBcc-hint' }, 'Nothing happened yet.')
    );
  }

  private renderUsage(snapshot: WorkflowSnapshot): HTMLElement | null {
    const rows = usageRows(snapshot);
    if (!rows.length) {
      return null;
    }
    return section(
      'usage',
      'Planner usage',
      this.openState,
      false,
      'bcc-usage',
      h(
        'table',
        { class: 'jp-NotebookBcc-table' },
        h(
          'thead',
          {},
          h('tr', {}, h('th', {}, 'Stage'), h('th', {}, 'Calls'), h('th', {}, 'Tokens'), h('th', {}, 'Latency'))
        ),
        h(
          'tbody',
          {},
          ...rows.map(r =>
            h('tr', {}, h('td', {}, r.scope), h('td', {}, String(r.calls)), h('td', {}, r.tokens), h('td', {}, r.latency))
          )
        )
      )
    );
  }

  private renderDiagram(snapshot: WorkflowSnapshot): HTMLElement {
    const blueprint = snapshot.planner.kind === 'blueprint';
    if (!blueprint && this.diagramMachine === 'stages') {
      this.diagramMachine = 'fsm';
    }
    const tab = (machine: 'fsm' | 'stages', label: string): HTMLElement =>
      h(
        'button',
        {
          class: `jp-NotebookBcc-tab${this.diagramMachine === machine ? ' jp-mod-active' : ''}`,
          'data-testid': `bcc-diagram-${machine}`,
          role: 'tab',
          'aria-selected': String(this.diagramMachine === machine),
          onclick: () => {
            this.diagramMachine = machine;
            this.diagramKey = '';
            this.render();
          }
        },
        label
      );
    const details = section(
      'diagram',
      'State diagram',
      this.openState,
      false,
      'bcc-diagram',
      h(
        'div',
        { class: 'jp-NotebookBcc-tabs', role: 'tablist' },
        tab('fsm', 'Workflow FSM'),
        blueprint ? tab('stages', 'Stage machine') : null
      ),
      this.diagramNode
    );
    const key = `${snapshot.workflow_id}:${this.diagramMachine}:${snapshot.fsm.state}:${snapshot.stage_machine?.current_state ?? ''}`;
    const load = (): void => {
      if (details.open && key !== this.diagramKey) {
        this.diagramKey = key;
        void this.loadDiagram(snapshot.workflow_id, this.diagramMachine, key);
      }
    };
    details.addEventListener('toggle', load);
    load();
    return details;
  }

  private async loadDiagram(workflowId: string, machine: 'fsm' | 'stages', key: string): Promise<void> {
    try {
      const doc = await this.services.api.diagram(workflowId, machine);
      if (key !== this.diagramKey) {
        return;
      }
      const caption = h(
        'div',
        { class: 'jp-NotebookBcc-hint' },
        doc.current ? `Current: ${humanState(doc.current)}` : 'No current state.'
      );
      const mermaid = this.services.mermaid;
      if (mermaid) {
        try {
          const figure = await mermaid.renderFigure(doc.mermaid);
          if (key === this.diagramKey) {
            const title = machine === 'fsm' ? 'Workflow FSM' : 'Stage machine';
            const enlarge = h(
              'button',
              {
                class: 'jp-NotebookBcc-button jp-NotebookBcc-linkButton',
                'data-testid': 'bcc-diagram-open',
                title: 'Open the diagram at full size in a tab',
                onclick: () => this.services.openFigure(title, figure.cloneNode(true) as HTMLElement)
              },
              'Open in a tab'
            );
            replaceChildren(
              this.diagramNode,
              h('div', { class: 'jp-NotebookBcc-diagramBar' }, caption, enlarge),
              h('div', { class: 'jp-NotebookBcc-figure' }, figure)
            );
          }
          return;
        } catch {
          // fall through to the text form
        }
      }
      replaceChildren(
        this.diagramNode,
        caption,
        h('pre', { class: 'jp-NotebookBcc-code jp-NotebookBcc-mermaidText' }, doc.mermaid)
      );
    } catch (error) {
      replaceChildren(
        this.diagramNode,
        h('div', { class: 'jp-NotebookBcc-hint' }, `No diagram: ${(error as Error).message}`)
      );
    }
  }
}
