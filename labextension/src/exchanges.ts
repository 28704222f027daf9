/**
 * The "Planner exchange" section of a behavior: the request summary and the raw reply behind
 * its cells, with tokens and latency (``GET /workflows/{id}/exchanges?behavior=``).
 *
 * Loaded when the user opens it, kept per workflow and behavior across the panel's
 * re-renders, and refreshed when the snapshot moved on. A blueprint run says it has none.
 */
import { ServerConnection } from '@jupyterlab/services';

import type { BccApi } from './api';
import { h, keyValueTable, replaceChildren } from './dom';
import { ExchangeList, exchangeCard, hasNoExchanges, noExchangeText } from './exchangeView';
import type { WorkflowSnapshot } from './types';

interface Entry {
  open: boolean;
  version: number;
  list: ExchangeList | null;
  error: string | null;
  loading: boolean;
  body: HTMLElement | null;
}

/** Builds and fills the sections; one instance per panel. */
export class ExchangeViews {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly api: BccApi) {}

  /** The section for ``behaviorId`` of ``snapshot`` (``where`` tells apart two copies). */
  section(snapshot: WorkflowSnapshot, behaviorId: string, where: string): HTMLElement {
    const kind = snapshot.planner.kind;
    const key = `${snapshot.workflow_id}\u0000${behaviorId}\u0000${where}`;
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { open: false, version: -1, list: null, error: null, loading: false, body: null };
      this.entries.set(key, entry);
    }
    const body = h('div', { class: 'jp-NotebookBcc-exchangeBody' });
    entry.body = body;
    const details = h(
      'details',
      {
        class: 'jp-NotebookBcc-exchange',
        'data-testid': 'bcc-exchange',
        'data-behavior-id': behaviorId,
        open: entry.open
      },
      h('summary', { class: 'jp-NotebookBcc-subheading' }, 'Planner exchange'),
      body
    );
    const current = entry;
    const refresh = (): void => {
      if (hasNoExchanges(kind)) {
        replaceChildren(body, h('div', { class: 'jp-NotebookBcc-hint' }, noExchangeText(kind)));
        return;
      }
      this.fill(current);
      if (current.version !== snapshot.version && !current.loading) {
        void this.load(current, snapshot.workflow_id, behaviorId, snapshot.version);
      }
    };
    details.addEventListener('toggle', () => {
      current.open = details.open;
      if (details.open) {
        refresh();
      }
    });
    if (entry.open) {
      refresh();
    }
    return details;
  }

  private async load(
    entry: Entry,
    workflowId: string,
    behaviorId: string,
    version: number
  ): Promise<void> {
    entry.loading = true;
    this.fill(entry);
    const url =
      this.api.url('workflows', encodeURIComponent(workflowId), 'exchanges') +
      `?behavior=${encodeURIComponent(behaviorId)}`;
    try {
      const response = await ServerConnection.makeRequest(url, {}, this.api.settings);
      const data = await response.json();
      if (!response.ok) {
        entry.error = String(data?.message ?? `${response.status} ${response.statusText}`);
      } else {
        entry.list = data as ExchangeList;
        entry.error = null;
        entry.version = version;
      }
    } catch (error) {
      entry.error = `The server could not be reached: ${String((error as Error).message ?? error)}`;
    } finally {
      entry.loading = false;
    }
    this.fill(entry);
  }

  private fill(entry: Entry): void {
    const body = entry.body;
    if (!body) {
      return;
    }
    const parts: HTMLElement[] = [];
    if (entry.error) {
      parts.push(h('div', { class: 'jp-NotebookBcc-error', role: 'alert' }, entry.error));
    }
    const list = entry.list;
    if (list && list.exchanges.length) {
      parts.push(...list.exchanges.map(row => this.card(row)));
    } else if (list) {
      parts.push(h('div', { class: 'jp-NotebookBcc-hint' }, noExchangeText(list.planner_kind)));
    } else if (entry.loading) {
      parts.push(h('div', { class: 'jp-NotebookBcc-hint' }, 'Loading the planner exchange…'));
    }
    replaceChildren(body, ...parts);
  }

  private card(row: ExchangeList['exchanges'][number]): HTMLElement {
    const card = exchangeCard(row);
    return h(
      'div',
      { class: 'jp-NotebookBcc-exchangeCard', 'data-testid': 'bcc-exchange-card', 'data-point': row.point },
      h('div', { class: 'jp-NotebookBcc-exchangeTitle' }, card.title),
      keyValueTable(card.rows, 'bcc-exchange-facts'),
      card.error ? h('div', { class: 'jp-NotebookBcc-error' }, card.error) : null,
      card.notes.length
        ? h('ul', { class: 'jp-NotebookBcc-exchangeNotes' }, ...card.notes.map(n => h('li', {}, n)))
        : null,
      h(
        'details',
        { class: 'jp-NotebookBcc-exchangePart' },
        h('summary', {}, 'Request summary'),
        h('pre', { class: 'jp-NotebookBcc-exchangePre', 'data-testid': 'bcc-exchange-request' }, card.summary)
      ),
      card.reply === null
        ? h('div', { class: 'jp-NotebookBcc-hint' }, 'No reply (the call failed).')
        : h(
            'details',
            { class: 'jp-NotebookBcc-exchangePart', open: true },
            h('summary', {}, 'Raw reply'),
            h(
              'pre',
              { class: 'jp-NotebookBcc-exchangePre', 'data-testid': 'bcc-exchange-reply', tabindex: '0' },
              card.reply
            )
          )
    );
  }
}
