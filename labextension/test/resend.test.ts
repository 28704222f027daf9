/**
 * Resending a command that means the same whatever the workflow did (src/resend.ts): a
 * workflow can commit twice between a 409 and the resend (a cell's end, then the next
 * cell's start), so the cancel is sent against each fresh snapshot, a bounded few times.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { ApiError } from '../src/api';
import { MAX_RESENDS, sendWhileMeant, whileStillAsked } from '../src/resend';
import type { Command, WorkflowSnapshot } from '../src/types';
import { loadSnapshot } from './helpers';

/** A workflow whose version moves ``moves`` times more while commands are in flight. */
function movingWorkflow(version: number, moves: number) {
  const sent: Command[] = [];
  const base = loadSnapshot('housing-waiting');
  const at = (v: number): WorkflowSnapshot => ({ ...base, version: v });
  const api = {
    async command(_id: string, command: Command): Promise<WorkflowSnapshot> {
      sent.push(command);
      if (command.expected_version !== version) {
        throw new ApiError(409, {
          code: 'conflict',
          message: `at version ${version}`,
          details: { snapshot: at(version) }
        });
      }
      return at(version + 1);
    }
  };
  return {
    api,
    sent,
    moved(): void {
      if (moves > 0) {
        moves -= 1;
        version += 1;
      }
    }
  };
}

const cancel = (version: number): Command => ({ event: 'CANCEL', expected_version: version });

describe('sendWhileMeant', () => {
  it('sends again against each fresh snapshot while the workflow keeps committing', async () => {
    const workflow = movingWorkflow(8, 2);
    const answer = await sendWhileMeant(workflow.api, 'wf', cancel(6), fresh => {
      workflow.moved(); // the loop commits again before the resend arrives
      return cancel(fresh.version);
    });
    assert.deepEqual(
      workflow.sent.map(c => c.expected_version),
      [6, 8, 9, 10]
    );
    assert.equal(answer.version, 11);
  });

  it('stops when the command no longer applies and throws the 409', async () => {
    const workflow = movingWorkflow(8, 0);
    await assert.rejects(
      sendWhileMeant(workflow.api, 'wf', cancel(6), () => null),
      (error: unknown) => error instanceof ApiError && error.status === 409
    );
    assert.equal(workflow.sent.length, 1);
  });

  it('without stillMeant a 409 is the answer', async () => {
    const workflow = movingWorkflow(8, 0);
    await assert.rejects(sendWhileMeant(workflow.api, 'wf', cancel(6)), ApiError);
    assert.equal(workflow.sent.length, 1);
  });

  it('gives up after a bounded number of resends', async () => {
    const workflow = movingWorkflow(8, 1000);
    await assert.rejects(
      sendWhileMeant(workflow.api, 'wf', cancel(6), fresh => {
        workflow.moved();
        return cancel(fresh.version);
      }),
      ApiError
    );
    assert.equal(workflow.sent.length, 1 + MAX_RESENDS);
  });

  it('other errors are thrown at once', async () => {
    let calls = 0;
    const api = {
      async command(): Promise<WorkflowSnapshot> {
        calls += 1;
        throw new ApiError(400, { code: 'bad_request', message: 'no', details: {} });
      }
    };
    await assert.rejects(
      sendWhileMeant(api, 'wf', cancel(6), fresh => cancel(fresh.version)),
      (error: unknown) => error instanceof ApiError && error.status === 400
    );
    assert.equal(calls, 1);
  });
});

describe('whileStillAsked', () => {
  const waiting = loadSnapshot('housing-waiting');
  const shown = waiting.run.pending[0];
  const at = (version: number, pending = waiting.run.pending): WorkflowSnapshot => ({
    ...waiting,
    version,
    run: { ...waiting.run, pending }
  });

  it('answers the same question again at the fresh version (a followed rename moved it)', () => {
    assert.ok(shown, 'the fixture waits on a decision');
    const again = whileStillAsked(shown, 'approve')(at(waiting.version + 1));
    assert.deepEqual(again, {
      decide: shown.id,
      decision: 'approve',
      expected_version: waiting.version + 1
    });
  });

  it('does not answer blind once the question was answered or replaced', () => {
    assert.equal(whileStillAsked(shown, 'reject')(at(waiting.version + 1, [])), null);
    const replaced = { ...shown, message: shown.message + ' (asked again)' };
    assert.equal(whileStillAsked(shown, 'approve')(at(waiting.version + 1, [replaced])), null);
    const other = { ...shown, details: { ...shown.details, extra: 1 } };
    assert.equal(whileStillAsked(shown, 'approve')(at(waiting.version + 1, [other])), null);
  });

  it('lands through sendWhileMeant after the workflow moved under the panel', async () => {
    const sent: Command[] = [];
    const api = {
      async command(_id: string, command: Command): Promise<WorkflowSnapshot> {
        sent.push(command);
        if (command.expected_version !== waiting.version + 1) {
          throw new ApiError(409, {
            code: 'conflict',
            message: 'moved',
            details: { snapshot: at(waiting.version + 1) }
          });
        }
        return at(waiting.version + 2, []);
      }
    };
    const answer = await sendWhileMeant(
      api,
      'wf',
      { decide: shown.id, decision: 'approve', expected_version: waiting.version },
      whileStillAsked(shown, 'approve')
    );
    assert.deepEqual(
      sent.map(c => c.expected_version),
      [waiting.version, waiting.version + 1]
    );
    assert.equal(answer.run.pending.length, 0);
  });
});
