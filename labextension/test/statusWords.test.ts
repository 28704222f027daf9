/**
 * The status line in plain words (src/statusWords.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { stateDetail, statusSentence } from '../src/statusWords';
import type { WorkflowSnapshot } from '../src/types';

function snap(run: Partial<WorkflowSnapshot['run']>, stage: string | null = 'modelling') {
  return {
    fsm: { state: 'stage_completed', history: [] },
    run: { status: 'running', pending: [], ...run },
    location: { current: { stage_id: stage } }
  } as unknown as WorkflowSnapshot;
}

describe('statusSentence', () => {
  it('asks for the decision by its question, not by the FSM state', () => {
    const s = snap({
      status: 'waiting',
      pending: [
        {
          id: 'd1',
          kind: 'stage_confirmation',
          message: 'Review the held-out RMSE',
          details: {},
          created_at: ''
        }
      ]
    });
    assert.equal(statusSentence(s), 'Waiting for your approval: Review the held-out RMSE');
    assert.equal(stateDetail(s), 'Workflow state: stage completed');
  });
  it('says the state of a failed or cancelled run is where it stopped', () => {
    assert.equal(
      stateDetail(snap({ status: 'failed', reason: 'cell_error' })),
      'Workflow state when it failed: stage completed'
    );
    assert.equal(
      stateDetail(snap({ status: 'cancelled' })),
      'Workflow state when it was cancelled: stage completed'
    );
    assert.equal(stateDetail(snap({ status: 'paused' })), 'Workflow state: stage completed');
  });
  it('names the stage by its title when the plan gives one', () => {
    const s = snap({ status: 'running' }, 'fit_2');
    (s.location as unknown as Record<string, unknown>).progress = {
      stages: { completed: [], current: { id: 'fit_2', title: 'Model fitting' }, remaining: [] }
    };
    assert.equal(statusSentence(s), 'Running Model fitting');
  });
  it('keeps the error of a failure reason and leaves out where the engine found it', () => {
    const reason =
      "stage tuning failed: in tuning / tune / tuning_alpha: InvalidParameterError: alpha must " +
      "be >= 0, got -1 (line 4 of cell tuning_alpha-0-2925e104c5d2); the workflow ended in end " +
      "state 'failed'";
    assert.equal(
      statusSentence(snap({ status: 'failed', reason }, 'tuning')),
      'Failed in Tuning: InvalidParameterError: alpha must be >= 0, got -1'
    );
    assert.equal(
      statusSentence(snap({ status: 'failed', reason: 'the kernel died' })),
      'Failed in Modelling: the kernel died'
    );
  });
  it('says Run resumes an interrupted run only where an engine drives it', () => {
    const reason = 'stopped: the workflow was deleted from this server';
    const s = snap({ status: 'interrupted', reason });
    assert.equal(statusSentence(s), `Interrupted: ${reason}; Run resumes it`);
    assert.equal(statusSentence(s, false), `Interrupted: ${reason}`);
  });
  it('names the stage a run failed in and why', () => {
    const s = snap({ status: 'failed', reason: 'InvalidParameterError: alpha < 0' });
    assert.equal(statusSentence(s), 'Failed in Modelling: InvalidParameterError: alpha < 0');
  });
  it('says what runs, and a pause with its reason', () => {
    assert.equal(statusSentence(snap({ status: 'running' })), 'Running Modelling');
    assert.equal(
      statusSentence(snap({ status: 'paused', reason: 'the notebook a.ipynb was deleted' }, null)),
      'Paused: the notebook a.ipynb was deleted'
    );
  });
});
