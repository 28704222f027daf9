/**
 * The panel's timeline of D4 events and its planner usage table.
 */
import { breakable, h, section } from './dom';
import type { SectionContext } from './panelContext';
import type { WorkflowEvent, WorkflowSnapshot } from './types';
import { renderTimelineRows } from './timelineGroups';
import { usageRows } from './view';

/** The latest events, newest first, each action's contract and cell events folded into one row. */
export function renderTimeline(ctx: SectionContext, timeline: WorkflowEvent[]): HTMLElement {
  const events = timeline; // grouped per action, newest first
  return section(
    'timeline',
    'Timeline',
    ctx.openState,
    false,
    'bcc-timeline',
    events.length
      ? h(
          'ol',
          { class: 'jp-NotebookBcc-timeline' },
          ...renderTimelineRows(events, ctx.openState).slice(0, 40)
        )
      : h('div', { class: 'jp-NotebookBcc-hint' }, 'Nothing happened yet.')
  );
}
/** Planner calls, tokens and latency in total and per stage, or null when never called. */
export function renderUsage(ctx: SectionContext, snapshot: WorkflowSnapshot): HTMLElement | null {
  const rows = usageRows(snapshot);
  if (!rows.length) {
    return null;
  }
  return section(
    'usage',
    'Planner usage',
    ctx.openState,
    false,
    'bcc-usage',
    h(
      'table',
      { class: 'jp-NotebookBcc-table jp-NotebookBcc-usageTable', 'data-testid': 'bcc-usage-table' },
      h(
        'thead',
        {},
        h('tr', {}, h('th', {}, 'Stage'), h('th', {}, 'Calls'), h('th', {}, 'Tokens'), h('th', {}, 'Latency'))
      ),
      h(
        'tbody',
        {},
        ...rows.map(r =>
          h(
            'tr',
            {},
            h('td', {}, breakable(r.scope)),
            h('td', {}, String(r.calls)),
            h('td', {}, r.tokens),
            h('td', {}, r.latency)
          )
        )
      )
    )
  );
}