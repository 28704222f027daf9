/**
 * The timeline with each action's contract rows grouped under one row (collapsed by
 * default): an action's contract is created, runs and ends in several events, and its cell
 * is written and executed -- one line "Action · code cell · succeeded" instead of five.
 *
 * ``groupTimeline`` is pure (unit-tested); ``renderTimelineRows`` draws the rows for the
 * panel's Timeline section.
 */
import { h } from './dom';
import type { WorkflowEvent } from './types';
import { clock, eventText, humanState } from './view';

export type TimelineRow =
  | { kind: 'event'; event: WorkflowEvent }
  | {
      kind: 'action';
      contractId: string;
      /** Its events, oldest first. */
      events: WorkflowEvent[];
      /** When it last changed (its newest event). */
      at: string;
      /** ``cell_execution``, ``confirmation``, ... when an event said so. */
      actionType: string | null;
      /** The contract's latest status (``succeeded``, ``running``, ...), when known. */
      status: string | null;
    };

const CONTRACT_ACTION = /^(?:create_contract|transition):([^:]+)(?::([^→]*)→(.*))?$/;

/** The contract an event belongs to, or null (a transition, a run change, ...). */
export function contractOf(event: WorkflowEvent): string | null {
  const detail = event.detail ?? {};
  if (event.kind !== 'contract' && event.kind !== 'cell') {
    return null;
  }
  const direct = detail['contract_id'];
  if (typeof direct === 'string' && direct) {
    return direct;
  }
  const action = detail['action'];
  if (event.kind === 'contract' && typeof action === 'string') {
    const match = CONTRACT_ACTION.exec(action);
    if (match) {
      return match[1];
    }
  }
  return null;
}

function statusOf(event: WorkflowEvent): string | null {
  const action = event.detail?.['action'];
  if (event.kind === 'contract' && typeof action === 'string') {
    const match = CONTRACT_ACTION.exec(action);
    if (match) {
      return match[3] ? match[3].trim().toLowerCase() : 'pending';
    }
  }
  return null;
}

/**
 * Events (oldest first) as rows, newest first: every contract or cell event that names a
 * contract joins that contract's one row, placed where its newest event is.
 */
export function groupTimeline(events: readonly WorkflowEvent[]): TimelineRow[] {
  const groups = new Map<string, Extract<TimelineRow, { kind: 'action' }>>();
  const rows: Array<{ seq: number; row: TimelineRow }> = [];
  for (const event of events) {
    const contractId = contractOf(event);
    if (contractId === null) {
      rows.push({ seq: event.seq, row: { kind: 'event', event } });
      continue;
    }
    let group = groups.get(contractId);
    if (!group) {
      group = { kind: 'action', contractId, events: [], at: event.at, actionType: null, status: null };
      groups.set(contractId, group);
    }
    group.events.push(event);
    group.at = event.at;
    const type = event.detail?.['action_type'];
    if (typeof type === 'string' && type) {
      group.actionType = type;
    }
    group.status = statusOf(event) ?? group.status;
  }
  for (const group of groups.values()) {
    rows.push({ seq: group.events[group.events.length - 1].seq, row: group });
  }
  rows.sort((a, b) => b.seq - a.seq);
  return rows.map(entry => entry.row);
}

/** "Action · cell execution · succeeded (4 events)". */
export function actionText(row: Extract<TimelineRow, { kind: 'action' }>): string {
  const parts = ['Action'];
  if (row.actionType) {
    parts.push(humanState(row.actionType).toLowerCase());
  }
  if (row.status) {
    parts.push(row.status);
  }
  const n = row.events.length;
  return `${parts.join(' · ')} (${n} event${n === 1 ? '' : 's'})`;
}

function eventRow(event: WorkflowEvent, testid: string): HTMLElement {
  return h(
    'li',
    {
      'data-testid': testid,
      'data-event': event.kind,
      class: `jp-NotebookBcc-event jp-NotebookBcc-event-${event.kind}`
    },
    h('span', { class: 'jp-NotebookBcc-clock' }, clock(event.at)),
    h('span', { class: 'jp-NotebookBcc-eventText' }, eventText(event))
  );
}

/**
 * The Timeline's rows: plain events as before, each action as a collapsed ``details`` whose
 * summary names the action (its ``data-contract-id`` lets a click show its cells) and whose
 * body lists its events. ``openState`` remembers the groups the user opened.
 */
export function renderTimelineRows(
  events: readonly WorkflowEvent[],
  openState: Map<string, boolean>
): HTMLElement[] {
  return groupTimeline(events).map(row => {
    if (row.kind === 'event') {
      return eventRow(row.event, 'bcc-event');
    }
    const key = `timeline-action:${row.contractId}`;
    const details = h(
      'details',
      { open: openState.get(key) ?? false },
      h(
        'summary',
        {},
        h('span', { class: 'jp-NotebookBcc-clock' }, clock(row.at)),
        h(
          'span',
          {
            class: 'jp-NotebookBcc-eventText jp-NotebookBcc-navLink',
            'data-testid': 'bcc-action-link',
            'data-contract-id': row.contractId,
            title: `Contract ${row.contractId}: click to show its cell in the notebook`
          },
          actionText(row)
        )
      ),
      h(
        'ol',
        { class: 'jp-NotebookBcc-actionEvents' },
        ...row.events
          .slice()
          .reverse()
          .map(event => eventRow(event, 'bcc-action-event'))
      )
    );
    details.addEventListener('toggle', () => openState.set(key, details.open));
    return h(
      'li',
      {
        'data-testid': 'bcc-event',
        'data-event': 'action',
        'data-contract-id': row.contractId,
        class: 'jp-NotebookBcc-event jp-NotebookBcc-actionGroup'
      },
      details
    );
  });
}
