/**
 * Replacing a code cell's outputs in the changes Lab follows (src/outputs.ts): outputs it
 * shows already are never set again; changed ones go as a removal, then an addition.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import type * as nbformat from '@jupyterlab/nbformat';

import { replaceOutputs, type CodeOutputs } from '../src/outputs';

function cell(shown: nbformat.IOutput[]): CodeOutputs & { calls: nbformat.IOutput[][] } {
  let outputs = shown;
  const calls: nbformat.IOutput[][] = [];
  return {
    calls,
    execution_count: 1,
    getOutputs: () => outputs,
    setOutputs(next: nbformat.IOutput[]): void {
      calls.push(next);
      outputs = next;
    }
  };
}

const stream = (text: string): nbformat.IOutput =>
  ({ output_type: 'stream', name: 'stdout', text }) as nbformat.IOutput;

describe('replaceOutputs', () => {
  it('leaves a cell alone when it shows those outputs already (keys in any order)', () => {
    const shown = cell([{ name: 'stdout', output_type: 'stream', text: 'first output\n' }]);
    assert.equal(replaceOutputs(shown, [stream('first output\n')]), false);
    assert.deepEqual(shown.calls, []);
  });

  it('removes the shown outputs in one change and adds the new ones in another', () => {
    const shown = cell([stream('old\n')]);
    assert.equal(replaceOutputs(shown, [stream('new\n')]), true);
    assert.deepEqual(shown.calls, [[], [stream('new\n')]]);
  });

  it('adds outputs to an empty cell in one change, and clears without adding', () => {
    const empty = cell([]);
    replaceOutputs(empty, [stream('first\n')]);
    assert.deepEqual(empty.calls, [[stream('first\n')]]);
    const shown = cell([stream('gone\n')]);
    replaceOutputs(shown, []);
    assert.deepEqual(shown.calls, [[]]);
  });
});
