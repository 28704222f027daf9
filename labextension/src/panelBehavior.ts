/**
 * The panel's current behavior (agent, task, inputs, expected artifacts, acceptance criteria,
 * missing variables), its latest outputs and the kernel's variables.
 */
import { breakable, h, keyValueTable, section } from './dom';
import type { SectionContext } from './panelContext';
import type { WorkflowSnapshot } from './types';
import { behaviorView, dataVariables, effectViews, variableRows } from './view';

/** The current (or last) behavior and the gaps, or null when there is neither. */
export function renderBehavior(ctx: SectionContext, snapshot: WorkflowSnapshot): HTMLElement | null {
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
    body.push(ctx.exchange(view.id, 'behavior-section'));
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
  return section('behavior', title, ctx.openState, true, 'bcc-behavior', ...body);
}
/** The latest outputs of the run (errors highlighted). */
export function renderEffects(ctx: SectionContext, snapshot: WorkflowSnapshot): HTMLElement {
  const effects = effectViews(snapshot);
  return section(
    'effects',
    'Latest outputs',
    ctx.openState,
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
/** The kernel's data variables (code objects are counted, not listed). */
export function renderVariables(ctx: SectionContext, snapshot: WorkflowSnapshot): HTMLElement {
  const { data, hidden } = dataVariables(snapshot.variables);
  const rows = variableRows(data);
  return section(
    'variables',
    `Variables (${rows.length})`,
    ctx.openState,
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
                  h('code', { class: 'jp-NotebookBcc-id' }, breakable(r.name)),
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