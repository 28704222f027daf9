/**
 * The panel's pure view logic (src/view.ts) against the recorded housing snapshots
 * (tests/fixtures/panel/) and hand-made edge cases. Expected values are written out by hand
 * from the fixtures, never computed with the code under test.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { FsmTransition, PendingDecision, WorkflowSnapshot } from '../src/types';
import {
  backoffDelay,
  behaviorView,
  buildTree,
  clock,
  controlViews,
  criteria,
  dataVariables,
  decisionCode,
  detailRows,
  diffView,
  effectViews,
  stageReview,
  eventText,
  historyEvents,
  humanizeId,
  idParts,
  svgNaturalSize,
  humanState,
  isActive,
  mergeEvents,
  metricRows,
  percent,
  progressSummary,
  readable,
  shorten,
  TIMELINE_LIMIT,
  type TreeNode,
  usageRows,
  variableRows,
  withStoredEvents
} from '../src/view';
import { emptySnapshot, event, item, loadSnapshot } from './helpers';

// -- inputs ------------------------------------------------------------------------------

/**
 * A run in the middle of its third stage: two stages done (the second failed), the current
 * stage on its second visit, in its third step, on the second of three behaviors.
 */
function runningSnapshot(): WorkflowSnapshot {
  const snapshot = emptySnapshot();
  snapshot.run.status = 'running';
  snapshot.fsm.state = 'behavior_running';
  snapshot.location.current = {
    stage_id: 'model',
    step_id: 'fit',
    behavior_id: 'ridge',
    behavior_iteration: 3
  };
  snapshot.location.progress = {
    stages: {
      completed: [
        item('load', {
          title: 'Load the data',
          completion_status: 'success',
          extra: {
            steps: [{ id: 'planned_only' }],
            step_results: [{ id: 'read_csv', completion_status: 'success', iteration: 1 }]
          }
        }),
        item('clean', {
          title: '   ',
          completion_status: 'failed',
          extra: {
            step_results: [
              { id: 'dedupe', completion_status: 'success', iteration: 1 },
              { id: 'impute', completion_status: 'failed', iteration: 2 }
            ]
          }
        })
      ],
      current: item('model', {
        title: 'Model',
        goal: 'Fit a model',
        visits: 2,
        completion_status: 'success',
        pcs_considerations: {
          predictability: 'held-out split',
          computability: null,
          stability: 'three seeds'
        }
      }),
      remaining: [
        item('report', {
          title: 'Report',
          extra: { steps: [{ id: 'write_up', title: 'Write up' }, { title: 'no id' }, 'junk', 7] }
        })
      ]
    },
    steps: {
      completed: [
        item('split', { title: 'Split', completion_status: 'success', iteration: 1 }),
        item('baseline', { title: 'Baseline', completion_status: 'skipped' })
      ],
      current: item('fit', { title: 'Fit', completion_status: 'success' }),
      remaining: [item('evaluate', { title: 'Evaluate', completion_status: 'success' })]
    },
    behaviors: {
      completed: [item('ols', { completion_status: 'failed', iteration: 1 })],
      current: item('ridge', {
        title: 'Ridge regression',
        iteration: 1,
        agent: 'Model',
        task: 'Fit a ridge regression',
        inputs: { X: 'the features', y: 'the target' },
        outputs: { model: 'the fitted model', rmse: '' },
        artifacts_produced: [],
        acceptance: ['rmse < 18000', 'r2 > 0.9', 'model is not None']
      }),
      remaining: [item('lasso', { completion_status: 'success' })],
      current_outputs: { expected: ['model', 'rmse', 'r2'], produced: ['rmse'], in_progress: [] },
      iteration: 2
    }
  };
  snapshot.variables = { r2: { type: 'float', value: 0.91 } };
  snapshot.acceptance = {
    ridge: {
      'rmse < 18000': { status: 'failed', message: 'rmse is 24183' },
      'r2 > 0.9': { status: 'passed', message: null }
    }
  };
  return snapshot;
}

/** Seed 003's transition table (notebook_bcc/fsm/table.py), copied row by row. */
const FSM: FsmTransition[] = [
  ['idle', 'START_WORKFLOW', 'stage_running'],
  ['stage_running', 'START_STEP', 'step_running'],
  ['stage_running', 'COMPLETE_STAGE', 'stage_completed'],
  ['step_running', 'START_BEHAVIOR', 'behavior_running'],
  ['step_running', 'COMPLETE_STEP', 'step_completed'],
  ['behavior_running', 'START_ACTION', 'action_running'],
  ['behavior_running', 'COMPLETE_BEHAVIOR', 'behavior_completed'],
  ['action_running', 'COMPLETE_ACTION', 'action_completed'],
  ['action_completed', 'NEXT_ACTION', 'action_running'],
  ['action_completed', 'COMPLETE_BEHAVIOR', 'behavior_completed'],
  ['behavior_completed', 'NEXT_BEHAVIOR', 'behavior_running'],
  ['behavior_completed', 'COMPLETE_STEP', 'step_completed'],
  ['step_completed', 'NEXT_STEP', 'step_running'],
  ['step_completed', 'COMPLETE_STAGE', 'stage_completed'],
  ['stage_completed', 'NEXT_STAGE', 'stage_running'],
  ['stage_completed', 'COMPLETE_WORKFLOW', 'workflow_completed'],
  ['workflow_completed', 'RESET', 'idle'],
  ['action_running', 'UPDATE_WORKFLOW', 'workflow_update_pending'],
  ['action_running', 'UPDATE_STEP', 'step_update_pending'],
  ['workflow_update_pending', 'UPDATE_WORKFLOW_CONFIRMED', 'action_completed'],
  ['workflow_update_pending', 'UPDATE_WORKFLOW_REJECTED', 'action_completed'],
  ['workflow_update_pending', 'COMPLETE_ACTION', 'workflow_update_pending'],
  ['step_update_pending', 'UPDATE_STEP_CONFIRMED', 'action_completed'],
  ['step_update_pending', 'UPDATE_STEP_REJECTED', 'error'],
  ['stage_running', 'FAIL', 'error'],
  ['stage_running', 'CANCEL', 'cancelled'],
  ['step_running', 'FAIL', 'error'],
  ['step_running', 'CANCEL', 'cancelled'],
  ['behavior_running', 'FAIL', 'error'],
  ['behavior_running', 'CANCEL', 'cancelled'],
  ['action_running', 'FAIL', 'error'],
  ['action_running', 'CANCEL', 'cancelled'],
  ['action_completed', 'FAIL', 'error'],
  ['action_completed', 'CANCEL', 'cancelled'],
  ['behavior_completed', 'FAIL', 'error'],
  ['behavior_completed', 'CANCEL', 'cancelled'],
  ['step_completed', 'FAIL', 'error'],
  ['step_completed', 'CANCEL', 'cancelled'],
  ['stage_completed', 'CANCEL', 'cancelled'],
  ['workflow_update_pending', 'CANCEL', 'cancelled'],
  ['step_update_pending', 'CANCEL', 'cancelled'],
  ['error', 'RESET', 'idle'],
  ['error', 'START_WORKFLOW', 'stage_running'],
  ['error', 'START_BEHAVIOR', 'behavior_running'],
  ['cancelled', 'RESET', 'idle']
].map(([from, name, to]) => ({ from, event: name, to }));

/** Every node of a tree, depth first. */
function flatten(nodes: TreeNode[]): TreeNode[] {
  return nodes.flatMap(node => [node, ...flatten(node.children)]);
}

/** The parts of a node the tests compare (children as ids). */
function brief(node: TreeNode): [string, string, string | null, number | null, string[]] {
  return [node.id, node.status, node.completion, node.iteration, node.children.map(c => c.id)];
}

// -- the plan tree -----------------------------------------------------------------------

describe('buildTree', () => {
  it('shows the waiting housing run: four stages done, modelling current, results left', () => {
    const tree = buildTree(loadSnapshot('housing-waiting'));
    assert.deepEqual(tree.map(brief), [
      ['data_existence', 'completed', 'success', null, ['load_and_inventory']],
      ['data_cleaning', 'completed', 'success', null, ['deduplicate', 'impute_and_filter']],
      ['exploration', 'completed', 'success', null, ['describe_and_plot']],
      ['feature_engineering', 'completed', 'success', null, ['build_features']],
      // the current stage has no completion yet, even though the item already carries one
      ['modelling', 'current', null, null, ['fit_and_evaluate']],
      ['results', 'remaining', null, null, []]
    ]);
    assert.deepEqual(
      tree.map(n => n.title),
      [
        'Data existence establishment',
        'Data integrity and cleaning',
        'Exploratory data analysis',
        'Feature engineering',
        'Modelling with a held-out metric',
        'Results communication'
      ]
    );
    assert.equal(
      tree[5].goal,
      'Show where the model errs, export it once, and write the results down.'
    );
  });

  it('gives the steps of the waiting run their status, title and iteration', () => {
    const tree = buildTree(loadSnapshot('housing-waiting'));
    // a step of a completed stage comes from step_results: no title, so the id made readable
    const cleaning = tree[1].children;
    assert.deepEqual(cleaning.map(brief), [
      ['deduplicate', 'completed', 'success', 1, []],
      ['impute_and_filter', 'completed', 'success', 1, []]
    ]);
    assert.deepEqual(
      cleaning.map(n => n.title),
      ['Deduplicate', 'Impute and filter']
    );
    // the current stage's step comes from steps.completed, with its title; no current step,
    // so no behaviors under it
    const [fit] = tree[4].children;
    assert.deepEqual(brief(fit), ['fit_and_evaluate', 'completed', 'success', 1, []]);
    assert.equal(fit.title, 'Fit and evaluate');
    assert.equal(fit.goal, 'Train on 80 %, report RMSE and R² on the held-out 20 %.');
    assert.equal(flatten(tree).filter(n => n.status === 'current').length, 1);
  });

  it('titles the steps of completed stages from the known titles when given', () => {
    const known = new Map([
      ['deduplicate', 'Drop duplicate rows'],
      ['fit_and_evaluate', 'Not used: the step carries its own title']
    ]);
    const tree = buildTree(loadSnapshot('housing-waiting'), known);
    assert.deepEqual(
      tree[1].children.map(n => n.title),
      ['Drop duplicate rows', 'Impute and filter']
    );
    assert.equal(tree[4].children[0].title, 'Fit and evaluate');
  });

  it('lists a completed run stage by stage, re-entered stages once per visit, none current', () => {
    const tree = buildTree(loadSnapshot('housing-completed'));
    assert.deepEqual(
      tree.map(n => n.id),
      [
        'data_existence',
        'data_cleaning',
        'exploration',
        'feature_engineering',
        'modelling',
        'feature_engineering',
        'modelling',
        'results'
      ]
    );
    assert.ok(tree.every(n => n.status === 'completed' && n.completion === 'success'));
    // the second visits of feature engineering and modelling say so
    assert.deepEqual(
      tree.map(n => n.iteration),
      [null, null, null, null, null, 2, 2, null]
    );
    assert.deepEqual(
      tree[7].children.map(n => n.id),
      ['communicate', 'export']
    );
    assert.equal(flatten(tree).filter(n => n.status !== 'completed').length, 0);
  });

  it('marks exactly the current stage, step and behavior as current', () => {
    const tree = buildTree(runningSnapshot());
    assert.deepEqual(
      flatten(tree)
        .filter(n => n.status === 'current')
        .map(n => n.id),
      ['model', 'fit', 'ridge']
    );
    assert.deepEqual(tree.map(brief), [
      ['load', 'completed', 'success', null, ['read_csv']],
      ['clean', 'completed', 'failed', null, ['dedupe', 'impute']],
      ['model', 'current', null, 2, ['split', 'baseline', 'fit', 'evaluate']],
      ['report', 'remaining', null, null, ['write_up']]
    ]);
    const [split, baseline, fit, evaluate] = tree[2].children;
    assert.deepEqual(brief(split), ['split', 'completed', 'success', 1, []]);
    assert.deepEqual(brief(baseline), ['baseline', 'completed', 'skipped', null, []]);
    assert.deepEqual(brief(fit), ['fit', 'current', null, null, ['ols', 'ridge', 'lasso']]);
    assert.deepEqual(brief(evaluate), ['evaluate', 'remaining', null, null, []]);
    assert.deepEqual(fit.children.map(brief), [
      ['ols', 'completed', 'failed', 1, []],
      // the iteration comes from location.current, not from the item
      ['ridge', 'current', null, 3, []],
      ['lasso', 'remaining', null, null, []]
    ]);
  });

  it('takes step results over planned steps and drops malformed step entries', () => {
    const tree = buildTree(runningSnapshot());
    assert.deepEqual(
      tree[1].children.map(n => [n.id, n.completion, n.iteration]),
      [
        ['dedupe', 'success', 1],
        ['impute', 'failed', 2]
      ]
    );
    const [writeUp] = tree[3].children;
    assert.deepEqual(
      [writeUp.id, writeUp.title, writeUp.status, writeUp.completion],
      ['write_up', 'Write up', 'remaining', null]
    );
  });

  it('falls back to the id for blank titles and keeps goal and PCS rows', () => {
    const tree = buildTree(runningSnapshot());
    assert.equal(tree[1].title, 'Clean');
    assert.equal(tree[2].goal, 'Fit a model');
    assert.equal(tree[0].goal, null);
    assert.deepEqual(tree[2].pcs, [
      ['Predictability', 'held-out split'],
      ['Stability', 'three seeds']
    ]);
    assert.deepEqual(tree[0].pcs, []);
  });

  it('uses the level iteration when the location has none, and hides a first visit', () => {
    const snapshot = runningSnapshot();
    snapshot.location.current.behavior_iteration = 0;
    snapshot.location.progress.stages.current = item('model', { visits: 1 });
    const tree = buildTree(snapshot);
    assert.equal(tree[2].iteration, null);
    const ridge = tree[2].children[2].children[1];
    assert.equal(ridge.id, 'ridge');
    assert.equal(ridge.iteration, 2);
  });

  it('is empty before anything is planned', () => {
    assert.deepEqual(buildTree(emptySnapshot()), []);
  });
});

// -- progress and metrics ----------------------------------------------------------------

describe('progressSummary', () => {
  it('counts the waiting run: 4 of 6 stages, the current stage by title', () => {
    assert.deepEqual(progressSummary(loadSnapshot('housing-waiting')), {
      stagesDone: 4,
      stagesTotal: 6,
      stepsDone: 1,
      stepsTotal: 1,
      currentStage: 'Modelling with a held-out metric'
    });
  });

  it('counts a re-entered stage once in the completed run', () => {
    assert.deepEqual(progressSummary(loadSnapshot('housing-completed')), {
      stagesDone: 6,
      stagesTotal: 6,
      stepsDone: 2,
      stepsTotal: 2,
      currentStage: null
    });
  });

  it('counts the current and remaining steps of a running stage', () => {
    assert.deepEqual(progressSummary(runningSnapshot()), {
      stagesDone: 2,
      stagesTotal: 4,
      stepsDone: 2,
      stepsTotal: 4,
      currentStage: 'Model'
    });
  });

  it('does not count a stage as done while it is due to run again', () => {
    const snapshot = emptySnapshot();
    const stages = snapshot.location.progress.stages;
    stages.completed = [item('a'), item('b')];
    stages.current = item('a', { title: 'Stage A', visits: 2 });
    stages.remaining = [item('b'), item('c')];
    const summary = progressSummary(snapshot);
    assert.equal(summary.stagesDone, 0);
    assert.equal(summary.stagesTotal, 3);
    assert.equal(summary.currentStage, 'Stage A');
    stages.remaining = [item('c')];
    assert.equal(progressSummary(snapshot).stagesDone, 1);
  });

  it('is all zero without a plan', () => {
    assert.deepEqual(progressSummary(emptySnapshot()), {
      stagesDone: 0,
      stagesTotal: 0,
      stepsDone: 0,
      stepsTotal: 0,
      currentStage: null
    });
  });
});

describe('percent and metricRows', () => {
  it('rounds ratios to whole percent and dashes unknown ones', () => {
    assert.equal(percent(0.833333), '83 %');
    assert.equal(percent(0.25), '25 %');
    assert.equal(percent(0.999), '100 %');
    assert.equal(percent(0), '0 %');
    assert.equal(percent(1), '100 %');
    assert.equal(percent(null), '—');
    assert.equal(percent(undefined), '—');
    assert.equal(percent(Number.NaN), '—');
  });

  it('shows the waiting run metrics', () => {
    assert.deepEqual(metricRows(loadSnapshot('housing-waiting').metrics), [
      ['Overall progress', '83 %'],
      ['Stage progress', '100 %'],
      ['Artifacts produced', '100 %'],
      ['Acceptance passed', '100 %'],
      ['Retry rate', '0 %'],
      ['Variable coverage', '100 %'],
      ['PCS: seeds set', 'yes'],
      ['PCS: library versions', 'yes'],
      ['PCS: held-out split', 'yes']
    ]);
  });

  it('dashes the completed run variable coverage (null in the snapshot)', () => {
    const rows = new Map(metricRows(loadSnapshot('housing-completed').metrics));
    assert.equal(rows.get('Variable coverage'), '—');
    assert.equal(rows.get('Overall progress'), '100 %');
  });

  it('dashes everything missing and says no for a false PCS flag', () => {
    assert.deepEqual(metricRows({}), [
      ['Overall progress', '—'],
      ['Stage progress', '—'],
      ['Artifacts produced', '—'],
      ['Acceptance passed', '—'],
      ['Retry rate', '—'],
      ['Variable coverage', '—'],
      ['PCS: seeds set', '—'],
      ['PCS: library versions', '—'],
      ['PCS: held-out split', '—']
    ]);
    const rows = new Map(
      metricRows({ retry_rate: 0.25, pcs: { seeds_set: false, holdout_split: null } })
    );
    assert.equal(rows.get('Retry rate'), '25 %');
    assert.equal(rows.get('PCS: seeds set'), 'no');
    assert.equal(rows.get('PCS: held-out split'), '—');
  });
});

// -- the current behavior ----------------------------------------------------------------

describe('criteria', () => {
  it('reads the kernel verdicts of the waiting run', () => {
    const snapshot = loadSnapshot('housing-waiting');
    assert.deepEqual(criteria(snapshot, 'stage:modelling', ['r2 > 0.9']), [
      { expression: 'r2 > 0.9', result: 'pass', message: null }
    ]);
  });

  it('maps failed and error verdicts and leaves unrun expressions pending', () => {
    const snapshot = emptySnapshot();
    snapshot.acceptance = {
      fit: {
        'rmse < 18000': { status: 'failed', message: 'rmse is 24183' },
        'r2 > 0.9': { status: 'error', message: "NameError: name 'r2' is not defined" },
        'model is not None': { status: 'passed' }
      }
    };
    assert.deepEqual(
      criteria(snapshot, 'fit', ['rmse < 18000', 'r2 > 0.9', 'model is not None', 'y.size > 0']),
      [
        { expression: 'rmse < 18000', result: 'fail', message: 'rmse is 24183' },
        { expression: 'r2 > 0.9', result: 'error', message: "NameError: name 'r2' is not defined" },
        { expression: 'model is not None', result: 'pass', message: null },
        { expression: 'y.size > 0', result: 'pending', message: null }
      ]
    );
    assert.deepEqual(criteria(snapshot, 'other_owner', ['rmse < 18000']), [
      { expression: 'rmse < 18000', result: 'pending', message: null }
    ]);
  });
});

describe('behaviorView', () => {
  it('details the last behavior of the waiting run, not running', () => {
    assert.deepEqual(behaviorView(loadSnapshot('housing-waiting')), {
      id: 'linear_model',
      title: 'Linear model',
      running: false,
      iteration: 1,
      agent: 'Model',
      task: 'Split with a fixed seed, fit a linear regression, evaluate on the test split.',
      inputs: [],
      artifacts: [],
      criteria: [
        { expression: 'rmse > 0', result: 'pass', message: null },
        { expression: '0 < r2 <= 1', result: 'pass', message: null }
      ]
    });
  });

  it('details the export behavior of the completed run', () => {
    const view = behaviorView(loadSnapshot('housing-completed'));
    assert.ok(view);
    assert.equal(view.id, 'export_model');
    assert.equal(view.agent, 'Communicate');
    assert.equal(view.running, false);
    assert.deepEqual(view.criteria, [
      { expression: "os.path.exists('housing_model.pkl')", result: 'pass', message: null }
    ]);
  });

  it('details the running behavior with its artifacts and a failing criterion', () => {
    assert.deepEqual(behaviorView(runningSnapshot()), {
      id: 'ridge',
      title: 'Ridge regression',
      running: true,
      iteration: 3,
      agent: 'Model',
      task: 'Fit a ridge regression',
      inputs: [
        ['X', 'the features'],
        ['y', 'the target']
      ],
      artifacts: [
        // declared with a description, not produced yet
        { name: 'model', description: 'the fitted model', present: false },
        // produced according to current_outputs; an empty description reads as none
        { name: 'rmse', description: null, present: true },
        // only expected, but already a kernel variable
        { name: 'r2', description: null, present: true }
      ],
      criteria: [
        { expression: 'rmse < 18000', result: 'fail', message: 'rmse is 24183' },
        { expression: 'r2 > 0.9', result: 'pass', message: null },
        { expression: 'model is not None', result: 'pending', message: null }
      ]
    });
  });

  it("ignores the level's current outputs once no behavior runs", () => {
    const snapshot = runningSnapshot();
    const behaviors = snapshot.location.progress.behaviors;
    behaviors.completed = [
      item('ridge', {
        iteration: 2,
        outputs: { model: 'the fitted model' },
        artifacts_produced: []
      })
    ];
    behaviors.current = null;
    snapshot.variables = {};
    const view = behaviorView(snapshot);
    assert.ok(view);
    assert.equal(view.running, false);
    assert.equal(view.iteration, 2);
    assert.deepEqual(view.artifacts, [
      { name: 'model', description: 'the fitted model', present: false }
    ]);
  });

  it('is null before any behavior', () => {
    assert.equal(behaviorView(emptySnapshot()), null);
  });
});

// -- variables ---------------------------------------------------------------------------

describe('variableRows', () => {
  it('rounds floats to six significant digits, keeps ints and strings', () => {
    const info = (type: string, value: unknown) => ({
      type,
      value,
      shape: null,
      dtypes: null,
      length: null,
      repr: String(value),
      source: 'kernel'
    });
    const rows = variableRows({
      r2: info('float', 0.9834282366570102),
      tiny: info('float', 1.23456789e-9),
      n: info('int', 1496),
      label: info('str', 'price')
    } as unknown as Parameters<typeof variableRows>[0]);
    assert.deepEqual(
      rows.map(r => [r.name, r.value]),
      [
        ['label', 'price'],
        ['n', '1496'],
        ['r2', '0.983428'],
        ['tiny', '1.23457e-9']
      ]
    );
  });

  it('sorts the waiting run variables by name, case-insensitively', () => {
    assert.deepEqual(
      variableRows(loadSnapshot('housing-waiting').variables).map(r => r.name),
      [
        'ax',
        'by_hood',
        'clean_df',
        'column',
        'condition_rank',
        'data_inventory',
        'dedup_df',
        'display',
        'feature_round',
        'fig',
        'hood',
        'LinearRegression',
        'mean_squared_error',
        'model',
        'part',
        'predictions',
        'price_summary',
        'r2',
        'r2_score',
        'raw_df',
        'rmse',
        'train_test_split',
        'user_problem',
        'user_submit_files',
        'X',
        'X_test',
        'X_train',
        'y',
        'y_test',
        'y_train'
      ]
    );
  });

  it('shows shapes, lengths and scalar values only', () => {
    const rows = new Map(
      variableRows(loadSnapshot('housing-waiting').variables).map(r => [r.name, r])
    );
    assert.deepEqual(rows.get('raw_df'), {
      name: 'raw_df',
      type: 'DataFrame',
      shape: '1512 × 11',
      value: ''
    });
    assert.deepEqual(rows.get('by_hood'), {
      name: 'by_hood',
      type: 'Series',
      shape: '5',
      value: ''
    });
    assert.deepEqual(rows.get('user_submit_files'), {
      name: 'user_submit_files',
      type: 'list',
      shape: 'len 1',
      value: ''
    });
    assert.deepEqual(rows.get('price_summary'), {
      name: 'price_summary',
      type: 'dict',
      shape: 'len 9',
      value: ''
    });
    assert.deepEqual(rows.get('column'), {
      name: 'column',
      type: 'str',
      shape: 'len 9',
      value: 'bathrooms'
    });
    assert.deepEqual(rows.get('rmse'), {
      name: 'rmse',
      type: 'float',
      shape: '',
      value: '24183.1'
    });
    assert.deepEqual(rows.get('feature_round'), {
      name: 'feature_round',
      type: 'int',
      shape: '',
      value: '1'
    });
    assert.deepEqual(rows.get('display'), {
      name: 'display',
      type: 'function',
      shape: '',
      value: ''
    });
  });

  it('falls back to the repr of scalars, never shows objects, and shortens', () => {
    const rows = variableRows(
      {
        none: { type: 'NoneType', value: null, repr: 'None' },
        obj: { type: 'dict', value: { a: 1 }, repr: "{'a': 1}" },
        long: { type: 'str', value: 'word '.repeat(20) },
        spaced: { type: 'str', value: 'a\n\n  b\tc' },
        empty_shape: { type: 'ndarray', shape: [], length: 0 },
        flag: { type: 'bool', value: false }
      },
      12
    );
    assert.deepEqual(rows, [
      { name: 'empty_shape', type: 'ndarray', shape: 'len 0', value: '' },
      { name: 'flag', type: 'bool', shape: '', value: 'false' },
      { name: 'long', type: 'str', shape: '', value: 'word word w…' },
      { name: 'none', type: 'NoneType', shape: '', value: 'None' },
      { name: 'obj', type: 'dict', shape: '', value: '' },
      { name: 'spaced', type: 'str', shape: '', value: 'a b c' }
    ]);
  });

  it('is empty without variables', () => {
    assert.deepEqual(variableRows({}), []);
  });
});

describe('dataVariables', () => {
  it('leaves the functions and classes of the waiting run out of the table', () => {
    const variables = loadSnapshot('housing-waiting').variables;
    const { data, hidden } = dataVariables(variables);
    assert.equal(hidden, 5);
    assert.equal(Object.keys(data).length, 25);
    for (const name of [
      'display',
      'LinearRegression',
      'mean_squared_error',
      'r2_score',
      'train_test_split'
    ]) {
      assert.equal(name in data, false, name);
    }
    // a fitted model, a figure and its axes are data
    for (const name of ['model', 'fig', 'ax', 'raw_df', 'rmse']) {
      assert.deepEqual(data[name], variables[name], name);
    }
  });

  it('hides nothing when there is no code', () => {
    assert.deepEqual(dataVariables({ n: { type: 'int', value: 1 } }), {
      data: { n: { type: 'int', value: 1 } },
      hidden: 0
    });
    assert.deepEqual(dataVariables({}), { data: {}, hidden: 0 });
  });
});

describe('shorten and readable', () => {
  it('collapses whitespace and cuts with an ellipsis at the width', () => {
    assert.equal(shorten('  a \n b  ', 10), 'a b');
    assert.equal(shorten('abcdefghij', 10), 'abcdefghij');
    assert.equal(shorten('abcdefghijk', 10), 'abcdefghi…');
    assert.equal(shorten('abcdefghijk', 10).length, 10);
  });

  it('reads lists, objects, booleans and nulls as one line', () => {
    assert.equal(readable(null), '—');
    assert.equal(readable(undefined), '—');
    assert.equal(readable(true), 'yes');
    assert.equal(readable(false), 'no');
    assert.equal(readable([3, 'x', null]), '3, x, —');
    assert.equal(readable({ a: 1, b: [true, false] }), 'a: 1; b: yes, no');
    assert.equal(readable('x'.repeat(100), 8), 'xxxxxxx…');
  });
});

// -- effects -----------------------------------------------------------------------------

describe('effectViews', () => {
  it('shows the current effects of the waiting run, trailing newline trimmed', () => {
    assert.deepEqual(effectViews(loadSnapshot('housing-waiting')), [
      { text: 'round 1: RMSE 24,183, R² 0.950', error: false }
    ]);
  });

  it('falls back to the newest history entries when nothing is current', () => {
    const summary =
      "{'rmse': 13923.224443433259, 'r2': 0.9834282366570102, 'features': 19, 'feature_rounds': 2}";
    const snapshot = loadSnapshot('housing-completed');
    snapshot.effects.current = [];
    assert.deepEqual(
      effectViews(snapshot).map(e => e.text),
      [
        'feature round 1: 13 features',
        'round 1: RMSE 24,183, R² 0.950',
        'feature round 2: 19 features',
        'round 2: RMSE 13,923, R² 0.983',
        '[image/png 35 KB, cell 20]',
        summary
      ]
    );
    assert.deepEqual(
      effectViews(snapshot, 2).map(e => e.text),
      ['[image/png 35 KB, cell 20]', summary]
    );
    assert.ok(effectViews(snapshot).every(e => !e.error));
  });

  it('flags error outputs wherever the error line starts', () => {
    const snapshot = emptySnapshot();
    snapshot.effects.current = [
      'loading\n',
      "KeyError: 'price'\nCell In[4], line 2\n----> 2 raw_df['price']\n",
      'Traceback (most recent call last):\n  File "<stdin>", line 1\n',
      "fitting\nValueError: could not convert string to float: 'n/a'",
      'KeyboardInterrupt: ',
      'no ValueError here, it is not at the start of a line',
      'ValueErrors counted: 0',
      "Exception: boom\nCell In[3], line 1\n----> 1 raise Exception('boom')",
      'Error: line contains NUL',
      'SystemExit: 1',
      'Error rate: 0.1'
    ];
    assert.deepEqual(
      effectViews(snapshot, 20).map(e => e.error),
      [false, true, true, true, true, false, false, true, true, true, false]
    );
    assert.equal(
      effectViews(snapshot, 20)[1].text,
      "KeyError: 'price'\nCell In[4], line 2\n----> 2 raw_df['price']"
    );
  });

  it('is empty without any output', () => {
    assert.deepEqual(effectViews(emptySnapshot()), []);
  });
});

// -- pending decisions -------------------------------------------------------------------

describe('diffView', () => {
  it('lists added, removed, replaced and changed steps, dropping empty sections and junk', () => {
    assert.deepEqual(
      diffView({
        diff: {
          level: 'step',
          added: ['tune_alpha'],
          removed: ['baseline', 3, null],
          replaced: [{ old: 'fit_ols', new: 'fit_ridge' }, 'junk', ['x']],
          moved: [],
          changed: ['evaluate']
        }
      }),
      {
        level: 'step',
        sections: [
          { label: 'Added', items: ['tune_alpha'] },
          { label: 'Removed', items: ['baseline'] },
          { label: 'Replaced', items: ['fit_ols → fit_ridge'] },
          { label: 'Changed', items: ['evaluate'] }
        ]
      }
    );
  });

  it('defaults the level to plan for a stage diff without one', () => {
    assert.deepEqual(
      diffView({
        diff: { added: ['tuning'], removed: ['results'], moved: ['exploration'] },
        proposal: {}
      }),
      {
        level: 'plan',
        sections: [
          { label: 'Added', items: ['tuning'] },
          { label: 'Removed', items: ['results'] },
          { label: 'Moved', items: ['exploration'] }
        ]
      }
    );
  });

  it('is null when the details carry no diff object', () => {
    assert.equal(diffView({}), null);
    assert.equal(diffView({ diff: null }), null);
    assert.equal(diffView({ diff: ['added'] }), null);
    assert.equal(diffView({ diff: 'added tuning' }), null);
    assert.deepEqual(diffView({ diff: {} }), { level: 'plan', sections: [] });
  });
});

describe('stageReview', () => {
  const withHistory = (): WorkflowSnapshot => {
    const snapshot = emptySnapshot();
    snapshot.effects = { ...snapshot.effects, current: [], history: ['alpha from another stage'] };
    return snapshot;
  };

  it("shows the stage visit's own outputs the decision carries, newest last", () => {
    const review = stageReview(
      { stage: 'review', outputs: ['one', 'two', 'ValueError: bad', 'four\n'] },
      withHistory()
    );
    assert.deepEqual(review, [
      { text: 'two', error: false },
      { text: 'ValueError: bad', error: true },
      { text: 'four', error: false }
    ]);
  });

  it('shows nothing of another stage when the stage printed nothing', () => {
    assert.deepEqual(stageReview({ stage: 'review', outputs: [] }, withHistory()), []);
    assert.deepEqual(stageReview({ stage: 'review', outputs: ['  ', 3] }, withHistory()), []);
  });

  it('falls back to the latest outputs for a decision that carries none', () => {
    assert.deepEqual(stageReview({ stage: 'review' }, withHistory()), [
      { text: 'alpha from another stage', error: false }
    ]);
  });
});

describe('detailRows and decisionCode', () => {
  it('never lists the outputs a stage confirmation carries as a detail row', () => {
    const [decision] = loadSnapshot('housing-waiting').run.pending;
    const carrying = { ...decision, details: { ...decision.details, outputs: ['RMSE 1'] } };
    assert.deepEqual(detailRows(carrying), [['Stage', 'modelling']]);
  });

  it('shows the stage confirmation of the waiting run without its contract id', () => {
    const [decision] = loadSnapshot('housing-waiting').run.pending;
    assert.equal(decision.kind, 'stage_confirmation');
    // it resumes in its own stage: that row would repeat the Stage row
    assert.deepEqual(detailRows(decision), [['Stage', 'modelling']]);
    assert.equal(decisionCode(decision), null);
    const elsewhere = { ...decision, details: { ...decision.details, resume_state: 'results' } };
    assert.deepEqual(detailRows(elsewhere), [
      ['Stage', 'modelling'],
      ['Resumes in', 'results']
    ]);
  });

  it('labels known keys, humanises the others and hides diff, proposal and code', () => {
    const decision: PendingDecision = {
      id: 'irreversible_confirmation-1',
      kind: 'irreversible_confirmation',
      message: 'Export the model?',
      created_at: '2026-11-22T03:32:53Z',
      details: {
        path: 'export_model',
        code: "with open('housing_model.pkl', 'wb') as handle:\n    pickle.dump(model, handle)",
        reason: 'writes a file',
        earlier_run: false,
        cells: [12, 13],
        diff: { added: ['x'] },
        proposal: { stages: [] },
        extra_info: { a: 1, b: null }
      }
    };
    assert.deepEqual(detailRows(decision), [
      ['Action', 'export_model'],
      ['Why', 'matches the pattern writes a file'],
      ['Ran before', 'no'],
      ['Cells', '12, 13'],
      ['extra info', 'a: 1; b: —']
    ]);
    assert.equal(
      decisionCode(decision),
      "with open('housing_model.pkl', 'wb') as handle:\n    pickle.dump(model, handle)"
    );
    // the plan's own flag says where it came from: a blueprint's author, or a planner
    const flagged = { ...decision, details: { reason: 'planner' } };
    assert.deepEqual(detailRows(flagged, 'blueprint'), [['Why', 'marked irreversible in the blueprint']]);
    assert.deepEqual(detailRows(flagged, 'llm'), [['Why', 'marked irreversible by the planner']]);
    assert.equal(decisionCode({ ...decision, details: { code: '  \n' } }), null);
    assert.equal(decisionCode({ ...decision, details: { code: 42 } }), null);
  });
});

// -- controls ----------------------------------------------------------------------------

type ControlState = [string, string, boolean];

function controls(snapshot: WorkflowSnapshot, transitions = FSM): ControlState[] {
  return controlViews(snapshot, transitions).map(c => [c.id, c.label, c.enabled]);
}

function withRun(
  status: WorkflowSnapshot['run']['status'],
  state: string,
  pending = 0
): WorkflowSnapshot {
  const snapshot = emptySnapshot();
  snapshot.run.status = status;
  snapshot.fsm.state = state;
  snapshot.run.pending = Array.from({ length: pending }, (_, i) => ({
    id: `d${i}`,
    kind: 'stage_confirmation' as const,
    message: 'ok?',
    details: {},
    created_at: '2026-11-22T03:32:53Z'
  }));
  return snapshot;
}

describe('controlViews', () => {
  it('waiting housing run: only cancel, run disabled until the decision is answered', () => {
    const views = controlViews(loadSnapshot('housing-waiting'), FSM);
    assert.deepEqual(
      views.map(c => [c.id, c.label, c.enabled]),
      [
        ['run', 'Run', false],
        ['pause', 'Pause', false],
        ['cancel', 'Cancel', true],
        ['reset', 'Reset', false],
        ['restart', 'Start over', false],
        ['retry', 'Retry from the failure', false]
      ]
    );
    assert.equal(views[0].title, 'Answer the pending decisions to continue');
    assert.equal(views[1].title, 'Only a running workflow pauses (it is waiting for you)');
    assert.equal(views[2].title, 'Cancel the workflow (asks first)');
    assert.equal(views[3].title, "Reset: not possible in the workflow's state (stage completed)");
  });

  it('completed housing run: only reset', () => {
    const views = controlViews(loadSnapshot('housing-completed'), FSM);
    assert.deepEqual(
      views.map(c => [c.id, c.enabled]),
      [
        ['run', false],
        ['pause', false],
        ['cancel', false],
        ['reset', true],
        ['restart', false],
        ['retry', false]
      ]
    );
    assert.equal(views[0].title, 'Nothing to continue: the run has completed');
    assert.equal(views[2].title, "Cancel: not possible in the workflow's state (completed)");
  });

  it('running: pause and cancel, not run', () => {
    const views = controlViews(withRun('running', 'behavior_running'), FSM);
    assert.deepEqual(
      views.map(c => [c.id, c.enabled]),
      [
        ['run', false],
        ['pause', true],
        ['cancel', true],
        ['reset', false],
        ['restart', false],
        ['retry', false]
      ]
    );
    assert.equal(views[0].title, 'Nothing to continue: the run is running');
    assert.equal(
      views[1].title,
      'Pause now, or after the running cell (a question to the planner is dropped)'
    );
  });

  it('step running: the engine moves to the next behavior itself, so no retry button', () => {
    const views = controlViews(withRun('running', 'step_running'), FSM);
    const retry = views.find(c => c.id === 'retry');
    assert.equal(retry?.enabled, false);
    assert.equal(retry?.title, 'Retry from the failure: only after a failure (the run is running)');
    assert.equal(views.find(c => c.id === 'restart')?.enabled, false);
  });

  it('paused: run, not pause; interrupted: resume', () => {
    assert.deepEqual(controls(withRun('paused', 'action_completed')).slice(0, 3), [
      ['run', 'Run', true],
      ['pause', 'Pause', false],
      ['cancel', 'Cancel', true]
    ]);
    const interrupted = controlViews(withRun('interrupted', 'action_running'), FSM);
    assert.deepEqual(
      [interrupted[0].label, interrupted[0].enabled, interrupted[0].title],
      ['Resume', true, 'Continue the run']
    );
  });

  it('failed in error: reset, restart and retry, no cancel', () => {
    assert.deepEqual(controls(withRun('failed', 'error')), [
      ['run', 'Run', false],
      ['pause', 'Pause', false],
      ['cancel', 'Cancel', false],
      ['reset', 'Reset', true],
      ['restart', 'Start over', true],
      ['retry', 'Retry from the failure', true]
    ]);
  });

  it('failed in a blueprint failure end state (stage completed): retry and start over', () => {
    const views = controlViews(withRun('failed', 'stage_completed'), FSM);
    assert.deepEqual(
      views.filter(c => c.enabled).map(c => [c.id, c.label]),
      [
        ['cancel', 'Cancel'],
        ['restart', 'Start over'],
        ['retry', 'Retry from the failure']
      ]
    );
  });

  it('cancelled: only reset', () => {
    assert.deepEqual(
      controls(withRun('cancelled', 'cancelled')).filter(c => c[2]).map(c => c[0]),
      ['reset']
    );
  });

  it('a pending decision explains the disabled run button', () => {
    const views = controlViews(withRun('waiting', 'workflow_update_pending', 1), FSM);
    assert.equal(views[0].enabled, false);
    assert.equal(views[0].title, 'Answer the pending decisions to continue');
    assert.equal(views[2].enabled, true);
    const noPending = controlViews(withRun('waiting', 'workflow_update_pending'), FSM);
    assert.equal(noPending[0].title, 'Nothing to continue: the run is waiting for you');
  });

  it('disables the event controls without an FSM table; cancel and reset are destructive', () => {
    const views = controlViews(withRun('failed', 'error'), []);
    assert.deepEqual(
      views.filter(c => c.enabled).map(c => c.id),
      []
    );
    assert.deepEqual(
      views.filter(c => c.destructive).map(c => c.id),
      ['cancel', 'reset']
    );
  });
});

// -- timeline ----------------------------------------------------------------------------

describe('idParts', () => {
  it('cuts an identifier or a path after each separator that has more after it', () => {
    assert.deepEqual(idParts('user_submit_files'), ['user_', 'submit_', 'files']);
    assert.deepEqual(idParts('data/housing.csv'), ['data/', 'housing.', 'csv']);
    assert.deepEqual(idParts('__init__'), ['__init__'], 'no cut before the name begins');
    assert.deepEqual(idParts('_private_name'), ['_private_', 'name']);
    assert.deepEqual(idParts('a__b'), ['a__', 'b']);
    assert.deepEqual(idParts('plain'), ['plain']);
    assert.deepEqual(idParts(''), ['']);
  });

  it('keeps every character, in order', () => {
    for (const text of ['stage_019_step_1', 'x.y-z/w_', '_private', 'a - b']) {
      assert.equal(idParts(text).join(''), text);
    }
  });
});

describe('mergeEvents', () => {
  it('appends new events in sequence order and drops the ones already there', () => {
    const timeline = [event(1), event(2), event(3)];
    const merged = mergeEvents(timeline, [
      event(5),
      event(2, { at: 'duplicate' }),
      event(4),
      event(5, { at: 'duplicate' })
    ]);
    assert.deepEqual(
      merged.map(e => e.seq),
      [1, 2, 3, 4, 5]
    );
    // the copy already in the timeline wins; the incoming duplicates are dropped
    assert.ok(merged.every(e => e.at !== 'duplicate'));
    // the timeline passed in is not changed
    assert.deepEqual(
      timeline.map(e => e.seq),
      [1, 2, 3]
    );
  });

  it('keeps the newest events up to the limit', () => {
    const timeline = [event(1), event(2), event(3)];
    assert.deepEqual(
      mergeEvents(timeline, [event(4), event(5)], 3).map(e => e.seq),
      [3, 4, 5]
    );
    const many = Array.from({ length: TIMELINE_LIMIT + 50 }, (_, i) => event(i + 1));
    const capped = mergeEvents([], many);
    assert.equal(capped.length, TIMELINE_LIMIT);
    assert.equal(capped[0].seq, 51);
    assert.equal(capped[capped.length - 1].seq, TIMELINE_LIMIT + 50);
  });

  it('keeps history events (negative sequence numbers) before the stream events', () => {
    const history = historyEvents(loadSnapshot('housing-waiting'));
    const merged = mergeEvents(history, [event(71), event(72)]);
    assert.equal(merged.length, 52);
    assert.deepEqual(
      merged.slice(-3).map(e => e.seq),
      [-1, 71, 72]
    );
  });
});

describe('withStoredEvents', () => {
  it('replaces the transitions made up from the history tail and keeps the live events', () => {
    const history = historyEvents(loadSnapshot('housing-waiting'));
    const live = mergeEvents(history, [event(71)]);
    const stored = [event(60, { kind: 'cell' }), event(70), event(71, { at: 'stored copy' })];
    const merged = withStoredEvents(live, stored);
    assert.deepEqual(
      merged.map(e => e.seq),
      [60, 70, 71]
    );
    assert.equal(merged[0].kind, 'cell');
    assert.notEqual(merged[2].at, 'stored copy', 'the live copy already shown stays');
  });

  it('leaves the timeline as it is when the store has no events', () => {
    const history = historyEvents(loadSnapshot('housing-waiting'));
    assert.equal(withStoredEvents(history, []), history);
  });

  it('keeps the newest events up to the limit', () => {
    const stored = Array.from({ length: 10 }, (_, i) => event(i + 1));
    assert.deepEqual(
      withStoredEvents([event(11)], stored, 4).map(e => e.seq),
      [8, 9, 10, 11]
    );
  });
});

describe('historyEvents', () => {
  it('turns the waiting run FSM history into transition events, oldest first', () => {
    const events = historyEvents(loadSnapshot('housing-waiting'));
    assert.equal(events.length, 50);
    assert.equal(events[0].seq, -50);
    assert.equal(events[49].seq, -1);
    assert.deepEqual(events[0], {
      workflow_id: 'wf-01085e8e8c6f',
      seq: -50,
      version: 70,
      at: '2026-11-22T03:32:52.214231Z',
      kind: 'transition',
      from: 'behavior_completed',
      event: 'COMPLETE_STEP',
      to: 'step_completed',
      actor: 'planner',
      run_status: 'waiting',
      detail: {}
    });
    assert.equal(eventText(events[49]), 'step completed → stage completed (COMPLETE_STAGE)');
    assert.equal(clock(events[49].at), '03:32:53');
  });

  it('is empty without history', () => {
    assert.deepEqual(historyEvents(emptySnapshot()), []);
  });
});

describe('eventText and clock', () => {
  it('reads each kind of event', () => {
    assert.equal(
      eventText(event(1, { from: 'stage_completed', event: 'NEXT_STAGE', to: 'stage_running' })),
      'stage completed → stage running (NEXT_STAGE)'
    );
    assert.equal(
      eventText(
        event(2, {
          kind: 'run',
          from: 'running',
          to: 'waiting',
          event: null,
          detail: { reason: 'Review the held-out RMSE' }
        })
      ),
      'Run waiting for you: Review the held-out RMSE'
    );
    assert.equal(
      eventText(event(3, { kind: 'run', from: 'paused', to: null, run_status: 'running' })),
      'Run resumed (was paused)'
    );
    assert.equal(eventText(event(8, { kind: 'run', from: null, to: 'running' })), 'Run started');
    assert.equal(
      eventText(
        event(7, {
          kind: 'run',
          from: null,
          to: null,
          event: 'notebook_moved',
          run_status: 'waiting',
          detail: { from: 'Untitled.ipynb', notebook_path: 'prices.ipynb' }
        })
      ),
      'Notebook renamed: Untitled.ipynb → prices.ipynb'
    );
    assert.equal(
      eventText(event(8, { kind: 'run', from: 'running', to: 'completed' })),
      'Run completed'
    );
    // notes on the run are not status changes (a kernel restored read "Run started")
    assert.equal(
      eventText(
        event(9, {
          kind: 'run',
          from: null,
          to: null,
          event: 'kernel_restored',
          run_status: 'running',
          detail: { kind: 'kernel_rebuild', replayed: 3, skipped: 1, failed: null }
        })
      ),
      'Kernel restored (it had stopped or restarted): 3 cells replayed, 1 irreversible skipped'
    );
    assert.equal(
      eventText(
        event(10, {
          kind: 'run',
          from: null,
          to: null,
          event: 'retry',
          run_status: 'running',
          detail: { stage: 'eda' }
        })
      ),
      'Retry from stage eda'
    );
    assert.equal(
      eventText(
        event(11, {
          kind: 'run',
          from: null,
          to: null,
          event: 'route',
          run_status: 'running',
          detail: { stage: 'model', outcome: 'failure', end: 'failed', rule: 'r1' }
        })
      ),
      'Stage model (failure) → failed'
    );
    assert.equal(
      eventText(
        event(12, { kind: 'run', from: null, to: null, event: 'owner_seen', run_status: 'running' })
      ),
      'Run: owner seen'
    );
    assert.equal(
      eventText(event(4, { kind: 'cell', detail: { cell_type: 'markdown', position: 0 } })),
      'markdown cell written #1'
    );
    assert.equal(
      eventText(event(5, { kind: 'cell', detail: { cell_type: 'code', position: 11 } })),
      'code cell written #12'
    );
    assert.equal(eventText(event(9, { kind: 'cell', detail: { position: 2 } })), 'cell written #3');
    assert.equal(
      eventText(event(6, { kind: 'decision', event: 'approved', detail: { kind: 'in_doubt' } })),
      'Action in doubt approved'
    );
    assert.equal(
      eventText(event(7, { kind: 'decision', event: 'rejected', detail: { kind: 'new_kind' } })),
      'new kind rejected'
    );
    assert.equal(
      eventText(
        event(8, {
          kind: 'contract',
          event: 'committed',
          detail: { action: 'run_cell:export_model' }
        })
      ),
      'contract committed export_model'
    );
    assert.equal(
      eventText(
        event(9, {
          kind: 'contract',
          event: 'succeed',
          detail: { action: 'transition:c-d8bb4ac942aa:running→completed' }
        })
      ),
      'contract succeed: running → completed'
    );
  });

  it('cuts the UTC time of day out of a timestamp', () => {
    assert.equal(clock('2026-11-22T03:32:53.386140Z'), '03:32:53');
    assert.equal(clock('not a time'), 'not a time');
  });

  it('makes ids readable', () => {
    assert.equal(humanizeId('impute_and_filter'), 'Impute and filter');
    assert.equal(humanizeId('fit-and--evaluate'), 'Fit and evaluate');
    assert.equal(humanizeId('_private_'), 'Private');
    assert.equal(humanizeId('X'), 'X');
    assert.equal(humanizeId('__'), '__');
  });

  it('reads state names as words', () => {
    assert.equal(humanState('workflow_update_pending'), 'workflow update pending');
    assert.equal(humanState('STAGE_RUNNING'), 'stage running');
  });
});

// -- usage and live connection -----------------------------------------------------------

describe('usageRows', () => {
  it('shows the waiting run planner usage in total and per stage', () => {
    assert.deepEqual(usageRows(loadSnapshot('housing-waiting')), [
      { scope: 'Total', calls: 30, tokens: '—', latency: '14 ms' },
      { scope: 'Planning', calls: 1, tokens: '—', latency: '2 ms' },
      { scope: 'data_existence', calls: 5, tokens: '—', latency: '3 ms' },
      { scope: 'data_cleaning', calls: 9, tokens: '—', latency: '3 ms' },
      { scope: 'exploration', calls: 5, tokens: '—', latency: '2 ms' },
      { scope: 'feature_engineering', calls: 5, tokens: '—', latency: '2 ms' },
      { scope: 'modelling', calls: 5, tokens: '—', latency: '2 ms' }
    ]);
  });

  it('shows tokens and seconds for an LLM planner', () => {
    const snapshot = emptySnapshot();
    snapshot.usage = {
      calls: 3,
      prompt_tokens: 1200,
      completion_tokens: 340,
      latency_ms: 2300,
      per_stage: {
        _workflow: { calls: 1, prompt_tokens: 800, completion_tokens: 0, latency_ms: 1000 },
        modelling: { calls: 2, prompt_tokens: 400, completion_tokens: 340, latency_ms: 999 }
      }
    };
    assert.deepEqual(usageRows(snapshot), [
      { scope: 'Total', calls: 3, tokens: '1200 + 340', latency: '2.3 s' },
      { scope: 'Planning', calls: 1, tokens: '800 + 0', latency: '1.0 s' },
      { scope: 'modelling', calls: 2, tokens: '400 + 340', latency: '999 ms' }
    ]);
  });

  it('rounds a latency just under a second up to seconds, not to "1000 ms"', () => {
    const snapshot = emptySnapshot();
    snapshot.usage = {
      calls: 1,
      prompt_tokens: 0,
      completion_tokens: 0,
      latency_ms: 999.6,
      per_stage: {}
    };
    assert.equal(usageRows(snapshot)[0].latency, '1.0 s');
  });

  it('is empty when the planner was never called', () => {
    assert.deepEqual(usageRows(emptySnapshot()), []);
  });
});

describe('backoffDelay', () => {
  it('doubles from the base, half fixed and half jitter', () => {
    assert.equal(backoffDelay(0, 0), 250);
    assert.equal(backoffDelay(0, 0.5), 375);
    assert.equal(backoffDelay(0, 1), 500);
    assert.equal(backoffDelay(1, 1), 1000);
    assert.equal(backoffDelay(2, 1), 2000);
    assert.equal(backoffDelay(3, 1), 4000);
    assert.equal(backoffDelay(4, 1), 8000);
    assert.equal(backoffDelay(4, 0), 4000);
  });

  it('is capped', () => {
    assert.equal(backoffDelay(5, 1), 15000);
    assert.equal(backoffDelay(5, 0), 7500);
    assert.equal(backoffDelay(50, 1), 15000);
    assert.equal(backoffDelay(5000, 1), 15000);
    assert.equal(backoffDelay(3, 1, 100, 700), 700);
  });

  it('never shrinks as attempts grow', () => {
    let previous = 0;
    for (let attempt = 0; attempt <= 12; attempt++) {
      const delay = backoffDelay(attempt, 0.3);
      assert.ok(delay >= previous, `attempt ${attempt}: ${delay} < ${previous}`);
      assert.ok(delay <= 15000);
      previous = delay;
    }
  });

  it('clamps the jitter and treats a negative attempt as the first', () => {
    assert.equal(backoffDelay(0, -3), 250);
    assert.equal(backoffDelay(0, 7), 500);
    assert.equal(backoffDelay(-4, 1), 500);
  });
});

describe('isActive', () => {
  it('is true only while running', () => {
    assert.equal(isActive('running'), true);
    const stopped = [
      'paused',
      'waiting',
      'interrupted',
      'failed',
      'completed',
      'cancelled'
    ] as const;
    for (const status of stopped) {
      assert.equal(isActive(status), false, status);
    }
  });
});

describe('svgNaturalSize', () => {
  const svg = (attrs: string): string =>
    `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" ${attrs}><g/></svg>`;

  it('reads the viewBox of a URL-encoded SVG (what Mermaid gives)', () => {
    const src =
      'data:image/svg+xml,' +
      encodeURIComponent(svg('width="100%" style="max-width: 2417px" viewBox="-8 -8 2417.5 904"'));
    assert.deepEqual(svgNaturalSize(src), { width: 2417.5, height: 904 });
  });

  it('reads a base64 SVG and falls back to width and height', () => {
    const src = 'data:image/svg+xml;base64,' + btoa(svg('width="640px" height="480"'));
    assert.deepEqual(svgNaturalSize(src), { width: 640, height: 480 });
  });

  it('gives null for anything else', () => {
    assert.equal(svgNaturalSize('data:image/png;base64,AAAA'), null);
    assert.equal(svgNaturalSize('data:image/svg+xml,' + encodeURIComponent('<p>no svg</p>')), null);
    assert.equal(svgNaturalSize('data:image/svg+xml,' + encodeURIComponent(svg('width="100%"'))), null);
    assert.equal(svgNaturalSize('data:image/svg+xml,%E0%A4%A'), null);
    assert.equal(
      svgNaturalSize('data:image/svg+xml,' + encodeURIComponent(svg('viewBox="0 0 0 0"'))),
      null
    );
  });
});
