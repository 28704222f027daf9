/**
 * The panel's controls toolbar and its pending decisions (approve / reject cards, with the
 * diff, the code of an irreversible action and the stage's latest output to review).
 */
import { h, keyValueTable } from './dom';
import type { SectionContext } from './panelContext';
import type { PendingDecision, WorkflowSnapshot } from './types';
import {
  DECISION_HINTS,
  DECISION_TITLES,
  controlViews,
  decisionCode,
  detailRows,
  diffView,
  stageReview
} from './view';

/** Why a control or a decision of a workflow no engine drives here cannot act. */
export const NOT_RUNNING_HERE =
  'No engine drives this workflow in this server now: start a new workflow on this ' +
  'notebook, or resume this one from the command line (notebook-bcc resume)';

/** The control buttons the FSM allows now. */
export function renderControls(ctx: SectionContext, snapshot: WorkflowSnapshot): HTMLElement {
  const buttons = controlViews(snapshot, ctx.transitions).map(control =>
    h(
      'button',
      {
        class: `jp-NotebookBcc-button${control.destructive ? ' jp-NotebookBcc-destructive' : ''}`,
        'data-testid': `bcc-${control.id}`,
        title: ctx.stored ? NOT_RUNNING_HERE : control.title,
        'aria-label': ctx.stored ? `${control.label}: ${NOT_RUNNING_HERE}` : control.title,
        disabled: !control.enabled || ctx.busy || ctx.stored,
        onclick: () => void ctx.control(control.id)
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
/** The decisions waiting for the user, or null when none. */
export function renderDecisions(ctx: SectionContext, snapshot: WorkflowSnapshot): HTMLElement | null {
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
    ...pending.map(decision => renderDecision(ctx, decision, snapshot))
  );
}
/** One decision card with its approve and reject buttons. */
export function renderDecision(ctx: SectionContext, decision: PendingDecision, snapshot: WorkflowSnapshot): HTMLElement {
  const [approveHint, rejectHint] = DECISION_HINTS[decision.kind];
  const diff = diffView(decision.details);
  const code = decisionCode(decision);
  const rows = detailRows(decision, snapshot.planner.kind);
  // A stage confirmation asks to review what the stage produced: that visit's own outputs.
  const confirming = decision.kind === 'stage_confirmation';
  const review = confirming ? stageReview(decision.details, snapshot) : [];
  const silent = confirming && !review.length && Array.isArray(decision.details['outputs']);
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
      : silent
        ? h(
            'div',
            { class: 'jp-NotebookBcc-review', 'data-testid': 'bcc-review' },
            h('div', { class: 'jp-NotebookBcc-hint' }, 'The stage printed no output.')
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
          title: ctx.stored ? NOT_RUNNING_HERE : approveHint,
          disabled: ctx.busy || ctx.stored,
          onclick: () => void ctx.decide('approve', decision.id)
        },
        'Approve'
      ),
      h(
        'button',
        {
          class: 'jp-NotebookBcc-button jp-mod-styled',
          'data-testid': 'bcc-reject',
          title: ctx.stored ? NOT_RUNNING_HERE : rejectHint,
          disabled: ctx.busy || ctx.stored,
          onclick: () => void ctx.decide('reject', decision.id)
        },
        'Reject'
      )
    )
  );
}