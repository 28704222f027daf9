/**
 * The notebook side of navigation, through the notebook tracker: clicking a plan node, a
 * behavior or an action in the panel scrolls the notebook to its cells; workflow cells carry
 * a small stage · step badge (a DOM element and a CSS class, never a change to the cell);
 * "Follow" keeps the running cell in view; plan nodes show their time.
 *
 * The panel calls :meth:`NotebookNavigator.decorate` after each render; everything it adds
 * is recomputed from the notebook's cells (``metadata.notebook_bcc``), see ``navigate.ts``
 * and ``timing.ts`` for the pure rules.
 */
import { Notification } from '@jupyterlab/apputils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { h } from './dom';
import { badgeText, cellMark, followIndex, matchingCells, ofWorkflow, type CellMark, type NavTarget } from './navigate';
import { formatDuration, nodeTimes, timeKey, visitTimeKey } from './timing';
import type { WorkflowSnapshot } from './types';

const BADGE = 'jp-NotebookBcc-cellBadge';
const WORKFLOW_CELL = 'jp-NotebookBcc-workflowCell';
const REVEALED = 'jp-NotebookBcc-revealed';
const FOLLOW_KEY = 'notebook-bcc:follow';
const REFRESH_MS = 150;
const TICK_MS = 5000;

function storedFollow(): boolean {
  try {
    return window.localStorage.getItem(FOLLOW_KEY) === '1';
  } catch {
    return false;
  }
}

export class NotebookNavigator {
  private followOn = storedFollow();
  private readonly watched = new WeakSet<NotebookPanel>();
  private readonly watchedCells = new WeakSet<object>();
  private readonly delegated = new WeakSet<HTMLElement>();
  private readonly timers = new Map<NotebookPanel, number>();
  private lastBody: HTMLElement | null = null;
  private lastPath: string | null = null;
  /** The workflow the panel shows: only its cells are navigated to and timed. */
  private lastWorkflow: string | null = null;
  private tick: number | null = null;
  /** What was last followed (path, cell, workflow cell count). */
  private followed = '';

  constructor(
    private readonly tracker: INotebookTracker,
    private readonly activate: (id: string) => void
  ) {
    tracker.forEach(panel => this.watch(panel));
    tracker.widgetAdded.connect((_, panel) => this.watch(panel));
  }

  /** Whether the running cell is kept in view. */
  get follow(): boolean {
    return this.followOn;
  }

  set follow(on: boolean) {
    this.followOn = on;
    try {
      window.localStorage.setItem(FOLLOW_KEY, on ? '1' : '0');
    } catch {
      // not remembered; still on for this page
    }
    const panel = this.lastPath ? this.find(this.lastPath) : null;
    if (on && panel) {
      this.keepRunningCellInView(panel, true);
    }
  }

  /** After the Workflow panel rendered ``body``: links, times and the Follow toggle. */
  decorate(body: HTMLElement, snapshot: WorkflowSnapshot | null, notebookPath: string | null): void {
    this.lastBody = body;
    this.lastPath = notebookPath;
    this.lastWorkflow = snapshot?.workflow_id ?? null;
    if (!this.delegated.has(body)) {
      this.delegated.add(body);
      body.addEventListener('click', event => this.onClick(event));
      body.addEventListener('keydown', event => {
        if (event.key === 'Enter' && (event.target as HTMLElement | null)?.classList.contains('jp-NotebookBcc-navLink')) {
          this.onClick(event);
        }
      });
    }
    if (!snapshot) {
      return;
    }
    this.addFollowToggle(body);
    for (const title of Array.from(body.querySelectorAll<HTMLElement>('[data-testid="bcc-tree"] .jp-NotebookBcc-nodeTitle'))) {
      title.classList.add('jp-NotebookBcc-navLink');
      title.tabIndex = 0;
      title.setAttribute('role', 'link');
      title.setAttribute('aria-description', 'Shows its cells in the notebook');
    }
    this.showTimes();
  }

  /** Scroll the notebook at ``path`` to the first cell ``target`` names; false if none. */
  async reveal(path: string, target: NavTarget): Promise<boolean> {
    const panel = this.find(path);
    if (!panel) {
      Notification.info('Open the notebook to see its cells.', { autoClose: 4000 });
      return false;
    }
    const indices = matchingCells(this.marks(panel), target);
    if (!indices.length) {
      Notification.info('No cell in the notebook belongs to this yet.', { autoClose: 4000 });
      return false;
    }
    this.activate(panel.id);
    const notebook = panel.content;
    notebook.activeCellIndex = indices[0];
    await notebook.scrollToItem(indices[0], 'start');
    const cells = indices.map(i => notebook.widgets[i]).filter(cell => Boolean(cell));
    for (const cell of cells) {
      cell.node.classList.add(REVEALED);
    }
    window.setTimeout(() => cells.forEach(cell => cell.node.classList.remove(REVEALED)), 2000);
    return true;
  }

  // -- the panel side ------------------------------------------------------------------

  private onClick(event: Event): void {
    const link = (event.target as HTMLElement | null)?.closest<HTMLElement>('.jp-NotebookBcc-navLink');
    if (!link || !this.lastPath) {
      return;
    }
    const contract = link.getAttribute('data-contract-id');
    let target: NavTarget;
    if (contract) {
      target = { contract };
    } else {
      target = treeTarget(link);
      // the title opens its cells, not the node (the marker and the rest of the row do)
      event.preventDefault();
      event.stopPropagation();
    }
    void this.reveal(this.lastPath, target);
  }

  private addFollowToggle(body: HTMLElement): void {
    const plan = body.querySelector('[data-testid="bcc-plan"]');
    const summary = plan?.querySelector(':scope > summary');
    if (!plan || !summary) {
      return;
    }
    const box = h('input', {
      type: 'checkbox',
      'data-testid': 'bcc-follow',
      checked: this.followOn,
      onchange: () => {
        this.follow = box.checked;
      }
    });
    summary.after(
      h(
        'label',
        {
          class: 'jp-NotebookBcc-check jp-NotebookBcc-follow',
          title: 'Scroll the notebook to each cell the workflow writes or runs'
        },
        box,
        ' Follow the running cell'
      )
    );
  }

  private showTimes(): void {
    const body = this.lastBody;
    const panel = this.lastPath ? this.find(this.lastPath) : null;
    if (!body) {
      return;
    }
    const times = panel ? nodeTimes(this.marks(panel), Date.now()) : new Map();
    let running = false;
    for (const item of Array.from(body.querySelectorAll<HTMLElement>('[data-testid="bcc-tree"] li[role="treeitem"]'))) {
      const label = item.querySelector<HTMLElement>(
        ':scope > details > summary > .jp-NotebookBcc-nodeLabel, :scope > .jp-NotebookBcc-leaf > .jp-NotebookBcc-nodeLabel'
      );
      if (!label) {
        continue;
      }
      const where = treeTarget(item);
      // a stage listed once per visit shows each visit's own time (its steps and behaviors
      // too); a node without a visit (a remaining stage) has none yet anyway
      const time = !where.stage
        ? undefined
        : where.visit
          ? times.get(visitTimeKey(where.visit, where.stage, where.step, where.behavior))
          : times.get(timeKey(where.stage, where.step, where.behavior));
      let span = label.querySelector<HTMLElement>(':scope > .jp-NotebookBcc-nodeTime');
      if (!time) {
        span?.remove();
        continue;
      }
      running = running || time.running;
      if (!span) {
        span = h('span', { class: 'jp-NotebookBcc-nodeTime', 'data-testid': 'bcc-node-time' });
        label.append(span);
      }
      span.textContent = formatDuration(time.seconds);
      span.title = time.running ? 'Time so far (a cell of it is running)' : 'Time spent in it';
    }
    if (running && this.tick === null) {
      this.tick = window.setInterval(() => this.showTimes(), TICK_MS);
    } else if (!running && this.tick !== null) {
      window.clearInterval(this.tick);
      this.tick = null;
    }
  }

  // -- the notebook side ---------------------------------------------------------------

  private find(path: string): NotebookPanel | null {
    return this.tracker.find(panel => panel.context.path === path) ?? null;
  }

  private marks(panel: NotebookPanel): CellMark[] {
    const model = panel.content.model;
    if (!model) {
      return [];
    }
    const marks: CellMark[] = [];
    for (let i = 0; i < model.cells.length; i++) {
      const mark = cellMark(i, model.cells.get(i).getMetadata('notebook_bcc'));
      if (mark) {
        marks.push(mark);
      }
    }
    return panel.context.path === this.lastPath ? ofWorkflow(marks, this.lastWorkflow) : marks;
  }

  private watch(panel: NotebookPanel): void {
    if (this.watched.has(panel)) {
      return;
    }
    this.watched.add(panel);
    const schedule = (): void => this.schedule(panel);
    void panel.context.ready.then(() => {
      panel.content.model?.contentChanged.connect(schedule);
      panel.content.model?.cells.changed.connect(schedule);
      // windowed notebooks render a cell's input when it scrolls into view
      panel.content.cellInViewportChanged.connect(schedule);
      schedule();
    });
    panel.disposed.connect(() => {
      const timer = this.timers.get(panel);
      if (timer !== undefined) {
        window.clearTimeout(timer);
      }
      this.timers.delete(panel);
    });
  }

  private schedule(panel: NotebookPanel): void {
    if (this.timers.has(panel) || panel.isDisposed) {
      return;
    }
    this.timers.set(
      panel,
      window.setTimeout(() => {
        this.timers.delete(panel);
        if (!panel.isDisposed) {
          this.refresh(panel);
        }
      }, REFRESH_MS)
    );
  }

  /** Badges on every workflow cell; then follow and times when it is the panel's notebook. */
  private refresh(panel: NotebookPanel): void {
    const notebook = panel.content;
    notebook.widgets.forEach((cell, index) => {
      if (!this.watchedCells.has(cell.model)) {
        this.watchedCells.add(cell.model);
        cell.model.metadataChanged.connect(() => this.schedule(panel));
      }
      const mark = cellMark(index, cell.model.getMetadata('notebook_bcc'));
      const badge = mark ? badgeText(mark) : null;
      // a line of its own right under the input: it never covers code or outputs
      const input = cell.node.querySelector<HTMLElement>(':scope > .jp-Cell-inputWrapper');
      const existing = Array.from(cell.node.querySelectorAll<HTMLElement>(`.${BADGE}`));
      let node = existing.find(b => input && b.previousElementSibling === input) ?? null;
      existing.filter(b => b !== node).forEach(b => b.remove());
      cell.node.classList.toggle(WORKFLOW_CELL, badge !== null);
      if (!badge || !input) {
        node?.remove();
        return;
      }
      if (!node) {
        node = h('div', { class: BADGE, 'data-testid': 'bcc-cell-badge' });
        input.after(node);
      }
      node.textContent = badge.text;
      node.title = badge.title;
    });
    if (panel.context.path === this.lastPath) {
      if (this.followOn) {
        this.keepRunningCellInView(panel);
      }
      this.showTimes();
    }
  }

  /**
   * Scroll to the running (else newest) workflow cell -- only when that cell or the number of
   * workflow cells changed since the last time (or ``force``), so the user's own edits and
   * scrolling in the notebook are not fought over.
   */
  private keepRunningCellInView(panel: NotebookPanel, force = false): void {
    const marks = this.marks(panel);
    const index = followIndex(marks);
    const key = `${panel.context.path}:${index}:${marks.length}`;
    if (index === null || (!force && key === this.followed)) {
      return;
    }
    this.followed = key;
    void panel.content.scrollToItem(index, 'auto');
  }
}

/** Stage (and its visit), step and behavior ids of a tree element, from its own and its
 *  ancestors' items. */
function treeTarget(element: HTMLElement): NavTarget {
  const target: NavTarget = {};
  let item: HTMLElement | null = element.closest('li[role="treeitem"]');
  while (item) {
    target.stage = target.stage ?? item.getAttribute('data-stage-id');
    const visit = item.getAttribute('data-visit');
    target.visit = target.visit ?? (visit ? Number(visit) : null);
    target.step = target.step ?? item.getAttribute('data-step-id');
    target.behavior = target.behavior ?? item.getAttribute('data-behavior-id');
    item = item.parentElement?.closest('li[role="treeitem"]') ?? null;
  }
  return target;
}
