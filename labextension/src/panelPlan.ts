/**
 * The panel's progress bar with its metrics, and the plan tree (stage -> step -> behavior)
 * whose nodes fold open while current.
 */
import { breakable, h, keyValueTable, section } from './dom';
import type { SectionContext } from './panelContext';
import type { WorkflowSnapshot } from './types';
import { TreeNode, buildTree, metricRows, progressSummary } from './view';

/** The progress bar, the stages / steps line and the metrics table. */
export function renderProgress(ctx: SectionContext, snapshot: WorkflowSnapshot): HTMLElement {
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
      ctx.openState,
      false,
      'bcc-metrics',
      keyValueTable(metricRows(snapshot.metrics))
    )
  );
}
/** The plan: the goal and the stage -> step -> behavior tree. */
export function renderTree(ctx: SectionContext, snapshot: WorkflowSnapshot): HTMLElement {
  const tree = buildTree(snapshot, ctx.stepTitles);
  const goals = snapshot.location.goals;
  return section(
    'plan',
    'Plan',
    ctx.openState,
    true,
    'bcc-plan',
    goals ? h('div', { class: 'jp-NotebookBcc-goal' }, goals) : null,
    tree.length
      ? h(
          'ul',
          { class: 'jp-NotebookBcc-tree', 'data-testid': 'bcc-tree', role: 'tree' },
          ...tree.map((stage, index) => renderNode(ctx, stage, 'stage', `stage:${index}:${stage.id}`))
        )
      : h(
          'div',
          { class: 'jp-NotebookBcc-hint', 'data-testid': 'bcc-tree' },
          'The planner has not planned any stage yet.'
        )
  );
}
/** One tree node; its open state is remembered only when the user chose it. */
export function renderNode(ctx: SectionContext, item: TreeNode, level: 'stage' | 'step' | 'behavior', key: string): HTMLElement {
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
    h('span', { class: 'jp-NotebookBcc-nodeTitle', title: item.id }, breakable(item.title)),
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
  const exchange = level === 'behavior' ? ctx.exchange(item.id, key) : null;
  const hasBody = about.length > 0 || item.children.length > 0 || exchange !== null;
  const childLevel = level === 'stage' ? 'step' : 'behavior';
  const children = item.children.length
    ? h(
        'ul',
        { class: 'jp-NotebookBcc-subtree', role: 'group' },
        ...item.children.map((child, index) =>
          renderNode(ctx, child, childLevel, `${key}/${index}:${child.id}`)
        )
      )
    : null;
  const attrs = {
    class: `jp-NotebookBcc-node jp-NotebookBcc-node-${item.status}`,
    // "bcc-behavior" is the current-behavior section; tree nodes are "bcc-tree-*".
    'data-testid': level === 'behavior' ? 'bcc-tree-behavior' : `bcc-${level}`,
    [`data-${level}-id`]: item.id,
    'data-status': item.status,
    role: 'treeitem',
    // a re-entered stage is listed once per visit: its title opens that visit's cells only
    ...(level === 'stage' && item.status !== 'remaining'
      ? { 'data-visit': String(item.iteration ?? 1) }
      : {})
  };
  if (!hasBody) {
    return h('li', attrs, h('div', { class: 'jp-NotebookBcc-leaf' }, label));
  }
  // Open while current, closed otherwise -- unless the user chose: only their choices are
  // remembered, so a stage that completes folds away by itself.
  const byDefault = item.status === 'current';
  const open = ctx.openState.get(key) ?? byDefault;
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
      ctx.openState.delete(key);
    } else {
      ctx.openState.set(key, details.open);
    }
  });
  return h('li', attrs, details);
}