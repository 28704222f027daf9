/**
 * Replacing the outputs a code cell shows, in the changes JupyterLab follows.
 *
 * Lab's code cell model follows its shared outputs by each change's delta. A replacement of
 * outputs the cell shows, made as one change (a shared ``setOutputs`` is an insert and a
 * delete in one transaction), leaves the cell showing nothing while its model holds the
 * outputs twice. Seen after a server restart: every cell of the run lost its outputs on
 * screen when the merge plan sent them again. So unchanged outputs are never set again, and
 * changed ones go as two changes: the old ones removed, then the new ones added.
 */
import type * as nbformat from '@jupyterlab/nbformat';

import { canonical } from './threeWay';

/** The output calls of a shared code cell. */
export interface CodeOutputs {
  getOutputs(): nbformat.IOutput[];
  setOutputs(outputs: nbformat.IOutput[]): void;
  execution_count: nbformat.ExecutionCount;
}

/** Whether ``cell`` shows other outputs than ``outputs``. */
export function outputsDiffer(cell: CodeOutputs, outputs: nbformat.IOutput[]): boolean {
  return canonical(cell.getOutputs()) !== canonical(outputs);
}

/** The removal step: clear what ``cells`` show (one change each, or one for all inside the
 *  caller's transaction). */
export function clearOutputs(cells: CodeOutputs[]): void {
  for (const cell of cells) {
    if (cell.getOutputs().length > 0) {
      cell.setOutputs([]);
    }
  }
}

/** The addition step, on cells cleared by :func:`clearOutputs` in an earlier change. */
export function addOutputs(cells: Array<[CodeOutputs, nbformat.IOutput[]]>): void {
  for (const [cell, outputs] of cells) {
    if (outputs.length > 0) {
      cell.setOutputs(outputs);
    }
  }
}

/** Replace one cell's outputs outside any transaction (two changes); false when it already
 *  shows ``outputs``. */
export function replaceOutputs(cell: CodeOutputs, outputs: nbformat.IOutput[]): boolean {
  if (!outputsDiffer(cell, outputs)) {
    return false;
  }
  clearOutputs([cell]);
  addOutputs([[cell, outputs]]);
  return true;
}
