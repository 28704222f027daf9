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

import { BccApi } from './api';
import { WorkflowsList } from './workflowsList';
import { ExchangeViews } from './exchanges';
import { h, patchChildren, replaceChildren } from './dom';
import type { ConnectionMode } from './live';
import { WorkflowFeed } from './live';
import { StartForm, type BrowseOptions } from './start';
import {
  countEarlierCells,
  startRemovingEarlier,
  type SharedNotebookView
} from './earlierRun';
import { renderBehavior, renderEffects, renderVariables } from './panelBehavior';
import { PanelCommands, type CommandHost } from './panelCommands';
import type { StillMeant } from './resend';
import type { SectionContext } from './panelContext';
import { renderControls, renderDecisions } from './panelControls';
import { DiagramSection } from './panelDiagram';
import { renderEmpty, renderHeader, type HeaderState } from './panelHeader';
import { plannerWait } from './plannerWait';
import { PanelNotices, type NoticeKind } from './panelNotices';
import { renderProgress, renderTree } from './panelPlan';
import { renderTimeline, renderUsage } from './panelTimeline';
import type { Command, FsmTransition, WorkflowEvent, WorkflowSnapshot } from './types';
import { historyEvents, mergeEvents, withStoredEvents, type ControlId } from './view';

export type { NoticeKind } from './panelNotices';

/** DOM id of the panel; tests and the shell find the panel by it. */
export const WORKFLOW_PANEL_ID = 'notebook-bcc-workflow-panel';

/** What the panel needs from JupyterLab (kept as callbacks so the panel stays testable). */
export interface PanelServices {
  api: BccApi;
  mermaid: IMermaidManager | null;
  /** Ask once before a destructive command; resolves true to go ahead. */
  confirm(title: string, body: string, accept: string): Promise<boolean>;
  /** Pick a file under the server root (the file dialog); null when cancelled. */
  browse(title: string, options?: BrowseOptions): Promise<string | null>;
  /** Whether a file exists (the start form preselects a workflow.yaml beside the notebook). */
  fileExists?(path: string): Promise<boolean>;
  /** After each render of the body (navigation, times and follow decorate it). */
  afterRender?(
    body: HTMLElement,
    snapshot: WorkflowSnapshot | null,
    notebookPath: string | null
  ): void;
  /** Called before a workflow starts on ``path`` (saves unsaved edits, D19). */
  beforeStart(path: string): Promise<void>;
  /** The shared model of the notebook at ``path`` open in this window (null: not open):
   *  the start form removes an earlier run's cells from it (``earlierRun.ts``). */
  notebookModel?(path: string): SharedNotebookView | null;
  /** Lab's default cell type (the blank cell of a notebook left without cells). */
  defaultCell?(path: string): string;
  /** Save the notebook open at ``path`` (its earlier run's cells put back). */
  saveNotebook?(path: string): Promise<void>;
  /** Show ``figure`` at full size in the main area (the side panel is too narrow for it). */
  openFigure(title: string, figure: HTMLElement): void;
  /** Open a notebook in the main area (the workflows list's Open). */
  openNotebook?(path: string): void;
}

/** Sections kept as they are when a re-render would draw them the same (their buttons must
 *  not be swapped under a press, see :func:`patchChildren`). */
const STABLE_SECTIONS: ReadonlySet<string> = new Set(['bcc-controls', 'bcc-decisions']);

/** How often the header's planner wait counts up. */
const WAIT_TICK_MS = 1000;

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
  private busy = false;
  private discoverTimer: number | null = null;
  /** Re-renders the header each second while the run waits for its planner. */
  private waitTimer: number | null = null;
  private startForm: StartForm | null = null;
  private readonly headerNode: HTMLElement;
  private readonly formNode: HTMLElement;
  private readonly bodyNode: HTMLElement;
  private _snapshotChanged = new Signal<this, WorkflowSnapshot | null>(this);
  private _eventsReceived = new Signal<this, WorkflowEvent[]>(this);
  private readonly notices = new PanelNotices();
  private readonly diagram: DiagramSection;
  private readonly commands: PanelCommands;
  private readonly workflowsList: WorkflowsList;
  private readonly exchanges: ExchangeViews;

  constructor(private readonly services: PanelServices) {
    super();
    this.id = WORKFLOW_PANEL_ID;
    this.addClass('jp-NotebookBcc-WorkflowPanel');
    this.title.label = 'Workflow';
    this.title.caption = 'notebook-bcc workflow';
    this.headerNode = h('div', { class: 'jp-NotebookBcc-header' });
    this.formNode = h('div', { class: 'jp-NotebookBcc-formArea' });
    this.bodyNode = h('div', { class: 'jp-NotebookBcc-body' });
    this.diagram = new DiagramSection(services, () => this.render());
    this.commands = new PanelCommands(this.commandHost());
    this.exchanges = new ExchangeViews(services.api);
    this.workflowsList = new WorkflowsList({
      api: services.api,
      open: path => services.openNotebook?.(path),
      confirm: (title, body, accept) => services.confirm(title, body, accept),
      notify: (kind, message) => this.notify(kind, message)
    });
    this.node.append(
      this.headerNode,
      this.notices.node,
      this.notices.reloadNode,
      this.notices.kernelNode,
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
    if (this.waitTimer !== null) {
      window.clearInterval(this.waitTimer);
      this.waitTimer = null;
    }
    super.dispose();
  }

  // -- which workflow ------------------------------------------------------------------

  /** Follow the workflow of the notebook at ``path`` (null: no notebook is active). */
  async setNotebook(path: string | null): Promise<void> {
    if (path === this.notebookPath && (this.feed || path === null)) {
      return;
    }
    if (path !== this.notebookPath) {
      this.notices.clear(); // a notice about the last notebook's workflow does not follow
    }
    this.notebookPath = path;
    this.stopFeed();
    this.setSnapshot(null);
    this.timeline = [];
    this.hideReloadNotice();
    this.hideKernelNotice();
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

  /**
   * A workflow writes the notebook at ``path`` (the co-editor's heartbeat says so): when this
   * panel shows that notebook and follows no workflow, or another one (started from a
   * terminal or another window meanwhile), look for it now rather than at the next
   * discovery, so the panel never says "no workflow" while its cells arrive.
   */
  workflowWriting(path: string, workflowId: string): void {
    if (path !== this.notebookPath || this.feed?.workflowId === workflowId) {
      return;
    }
    void this.discover();
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
    feed.stored.connect((_, events) => {
      // past events: the timeline only (they raise no notice and move no cell)
      this.timeline = withStoredEvents(this.timeline, events);
      this.render();
    });
    feed.modeChanged.connect((_, mode) => {
      const storedChanged = (mode === 'stored') !== (this.mode === 'stored');
      this.mode = mode;
      if (storedChanged) {
        this.render(); // the controls and decisions act only where an engine drives the run
      } else {
        this.showHeader();
      }
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
    this.notices.notify(kind, message);
  }

  /** The notebook on disk changed while the user has unsaved edits: offer a reload (D10). */
  showReloadNotice(reload: () => void): void {
    this.notices.showReloadNotice(reload);
  }

  hideReloadNotice(): void {
    this.notices.hideReloadNotice();
  }

  /** The workflow runs on a kernel the open notebook is not connected to: offer ``connect``. */
  showKernelNotice(connect: () => void): void {
    this.notices.showKernelNotice(connect);
  }

  hideKernelNotice(): void {
    this.notices.hideKernelNotice();
  }

  get reloadNoticeShown(): boolean {
    return this.notices.reloadNoticeShown;
  }

  // -- commands ------------------------------------------------------------------------

  /**
   * Send a D3 command based on the snapshot shown; 409 re-renders, 400 explains.
   *
   * ``stillMeant`` is for commands whose meaning does not depend on what the user saw
   * (pause, cancel of a workflow that keeps moving): given the fresh snapshot of a 409, it
   * returns the command to send again against it, or null when the command no longer
   * applies (``resend.ts``).
   */
  send(command: Command, what: string, stillMeant?: StillMeant): Promise<boolean> {
    return this.commands.send(command, what, stillMeant);
  }

  /** A control button (run, pause, cancel, ...); destructive ones ask once. */
  control(id: ControlId): Promise<boolean> {
    return this.commands.control(id);
  }

  /** Approve or reject a pending decision (the first one when ``id`` is omitted). */
  decide(decision: 'approve' | 'reject', id?: string): Promise<boolean> {
    return this.commands.decide(decision, id);
  }

  private commandHost(): CommandHost {
    const panel = this;
    return {
      api: this.services.api,
      get snapshot() {
        return panel._snapshot;
      },
      get busy() {
        return panel.busy;
      },
      get transitions() {
        return panel.transitions;
      },
      setBusy: busy => {
        this.busy = busy;
        this.render();
      },
      show: snapshot => this.setSnapshot(snapshot),
      refresh: async () => {
        await this.feed?.refresh();
      },
      notify: (kind, message) => this.notify(kind, message),
      confirm: (title, body, accept) => this.services.confirm(title, body, accept)
    };
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
        browse: (title, options) => this.services.browse(title, options),
        fileExists: this.services.fileExists,
        earlierCells: () => {
          const shared = this.services.notebookModel?.(path) ?? null;
          return shared ? countEarlierCells(shared) : 0;
        },
        onCancel: () => this.closeStartForm(),
        onSubmit: async (body, choices) => {
          const { result: snapshot, removed } = await startRemovingEarlier(
            {
              notebook: () => this.services.notebookModel?.(path) ?? null,
              defaultCell: () => this.services.defaultCell?.(path) ?? 'code',
              workflows: () => this.services.api.workflows(path),
              save: () => this.services.saveNotebook?.(path) ?? Promise.resolve()
            },
            path,
            choices.removeEarlier,
            async () => {
              await this.services.beforeStart(path);
              return this.services.api.create(body);
            }
          );
          this.closeStartForm();
          this.stopDiscovery();
          this.follow(snapshot.workflow_id, snapshot);
          const cells = removed ? `; the earlier run's ${removed} cell${removed === 1 ? '' : 's'} removed` : '';
          this.notify('info', `Workflow ${snapshot.workflow_id} started${cells}.`);
        }
      });
      replaceChildren(this.formNode, this.startForm.node);
    }
    this.startForm.focus();
    this.render();
  }

  /** The cells of the notebook at ``path`` changed: the start form counts its earlier-run
   *  cells again. */
  notebookCellsChanged(path: string): void {
    if (path === this.notebookPath) {
      this.startForm?.refreshEarlier();
    }
  }

  closeStartForm(): void {
    this.startForm = null;
    replaceChildren(this.formNode);
    this.render();
  }

  // -- rendering -----------------------------------------------------------------------

  /** What the section renderers read from the panel. */
  private sectionContext(): SectionContext {
    return {
      openState: this.openState,
      busy: this.busy,
      stored: this.mode === 'stored',
      transitions: this.transitions,
      stepTitles: this.stepTitles,
      control: id => this.control(id),
      decide: (decision, id) => this.decide(decision, id),
      exchange: (behaviorId, key) =>
        this._snapshot ? this.exchanges.section(this._snapshot, behaviorId, key) : null
    };
  }

  private headerState(): HeaderState {
    return {
      notebookPath: this.notebookPath,
      mode: this.mode,
      startFormOpen: this.startForm !== null,
      openStartForm: () => this.openStartForm()
    };
  }

  private showHeader(): void {
    const lastEventAt = this.timeline.reduce<string | null>(
      (newest, event) => (newest === null || event.at > newest ? event.at : newest),
      null
    );
    renderHeader(this.headerNode, this._snapshot, { ...this.headerState(), lastEventAt });
    // while the run waits for its planner, the header counts the seconds
    const waiting =
      this._snapshot !== null && plannerWait(this._snapshot, lastEventAt, this.mode) !== null;
    if (waiting && this.waitTimer === null) {
      this.waitTimer = window.setInterval(() => this.showHeader(), WAIT_TICK_MS);
    } else if (!waiting && this.waitTimer !== null) {
      window.clearInterval(this.waitTimer);
      this.waitTimer = null;
    }
  }

  private render(): void {
    const focused = this.rememberFocus();
    this.showHeader();
    const snapshot = this._snapshot;
    if (!snapshot) {
      replaceChildren(this.bodyNode, renderEmpty(this.headerState()));
    } else {
      const ctx = this.sectionContext();
      patchChildren(
        this.bodyNode,
        STABLE_SECTIONS,
        renderControls(ctx, snapshot),
        renderDecisions(ctx, snapshot),
        renderProgress(ctx, snapshot),
        renderTree(ctx, snapshot),
        renderBehavior(ctx, snapshot),
        renderEffects(ctx, snapshot),
        renderVariables(ctx, snapshot),
        renderTimeline(ctx, this.timeline),
        renderUsage(ctx, snapshot),
        this.diagram.render(this.openState, snapshot)
      );
    }
    this.services.afterRender?.(this.bodyNode, snapshot, this.notebookPath);
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
}
