/**
 * The panel's header (notebook, live connection, run status badge, the status in plain words
 * and the FSM state in a details line) and the empty state with its start button.
 */
import { h, replaceChildren } from './dom';
import type { ConnectionMode } from './live';
import { plannerWait, plannerWaitLine } from './plannerWait';
import { stateDetail, statusSentence } from './statusWords';
import type { WorkflowSnapshot } from './types';
import { STATUS_LABELS } from './view';

/** What the header needs from the panel. */
/** The header's word for each connection mode, and its tooltip. */
export const CONNECTION_WORDS: Record<ConnectionMode, string> = {
  live: 'live',
  polling: 'polling',
  stored: 'not running here',
  offline: 'offline'
};

const CONNECTION_TITLES: Record<ConnectionMode, string> = {
  live: 'Live: updates stream from the server',
  polling: 'Polling: the live stream is unavailable, the panel refreshes every 2 s',
  stored:
    'No engine drives this workflow in this server now (it was stopped here, or the command ' +
    'line runs it): the panel shows its stored state, refreshed every 2 s',
  offline: 'Offline: reconnecting…'
};

export interface HeaderState {
  notebookPath: string | null;
  mode: ConnectionMode;
  /** When the newest event the panel holds happened (how long a planner wait has lasted). */
  lastEventAt?: string | null;
  startFormOpen: boolean;
  openStartForm(): void;
}

/** The header: notebook name, connection, status badge, status sentence and FSM state. */
export function renderHeader(
node: HTMLElement,
snapshot: WorkflowSnapshot | null,
state: HeaderState
): void {
  const name = state.notebookPath ? state.notebookPath.split('/').pop() ?? '' : '';
  if (!snapshot) {
    replaceChildren(
      node,
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
      class: `jp-NotebookBcc-connection jp-NotebookBcc-connection-${state.mode}`,
      'data-testid': 'bcc-connection',
      'data-mode': state.mode,
      title: CONNECTION_TITLES[state.mode]
    },
    CONNECTION_WORDS[state.mode]
  );
  // a finished run, or one no engine drives here any more (stopped and released here)
  const canStartAnother =
    status === 'completed' ||
    status === 'cancelled' ||
    status === 'failed' ||
    (state.mode === 'stored' && (status === 'interrupted' || status === 'paused'));
  replaceChildren(
    node,
    h(
      'div',
      { class: 'jp-NotebookBcc-titleRow' },
      h('div', { class: 'jp-NotebookBcc-title', title: state.notebookPath ?? '' }, name),
      connection
    ),
    h(
      'div',
      { class: 'jp-NotebookBcc-statusRow' },
      badge,
      canStartAnother && !state.startFormOpen
        ? h(
            'button',
            {
              class: 'jp-NotebookBcc-button jp-NotebookBcc-linkButton',
              'data-testid': 'bcc-start',
              title: 'Start a new workflow on this notebook',
              onclick: () => state.openStartForm()
            },
            'New workflow…'
          )
        : null
    ),
    // what the run does or needs, in words; the FSM state in a details line below it
    h(
      'div',
      { class: 'jp-NotebookBcc-reason', 'data-testid': 'bcc-reason', title: snapshot.run.reason ?? '' },
      statusSentence(snapshot, state.mode !== 'stored')
    ),
    waitLine(snapshot, state),
    h(
      'div',
      { class: 'jp-NotebookBcc-state', 'data-testid': 'bcc-state' },
      stateDetail(snapshot)
    )
  );
}

/** "Waiting for the planner (DSLC at …) for the next cells — 12 s", while it lasts. */
function waitLine(snapshot: WorkflowSnapshot, state: HeaderState): HTMLElement | null {
  const line = plannerWaitLine(plannerWait(snapshot, state.lastEventAt, state.mode), Date.now());
  return line === null
    ? null
    : h('div', { class: 'jp-NotebookBcc-plannerWait', 'data-testid': 'bcc-planner-wait', role: 'status' }, line);
}

/** What the body shows when the notebook has no workflow (or no notebook is open). */
export function renderEmpty(state: HeaderState): HTMLElement {
  if (state.notebookPath === null) {
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
    state.startFormOpen
      ? null
      : h(
      'p',
      { class: 'jp-NotebookBcc-hint' },
      'Start one from a YAML blueprint or a planner: here, with the command ' +
        '“Start a workflow…” in the palette, or from a terminal with ' +
        '“notebook-bcc run BLUEPRINT --notebook ' +
        state.notebookPath +
        '”.'
        ),
    state.startFormOpen
      ? null
      : h(
          'button',
          {
            class: 'jp-NotebookBcc-button jp-mod-styled jp-mod-accept',
            'data-testid': 'bcc-start',
            onclick: () => state.openStartForm()
          },
          'Start a workflow…'
        )
  );
}
