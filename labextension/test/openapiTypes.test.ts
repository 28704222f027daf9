/**
 * The panel's wire types (src/types.ts) against the server's openapi.json
 * (labextension/openapi.json, kept current by tests/server/test_openapi_file.py): a field the
 * panel reads that is missing, renamed or retyped on the server fails here.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { Root, Schema, TypeChecker } from './openapiCheck';

const HERE = path.resolve(__dirname, '..', '..');
const SRC = path.join(HERE, 'src');
const OPENAPI: Schema = JSON.parse(fs.readFileSync(path.join(HERE, 'openapi.json'), 'utf8'));
const S = '#/components/schemas/';

const ROOTS: Root[] = [
  { name: 'WorkflowSnapshot', pointer: `${S}WorkflowSnapshot` },
  { name: 'WorkflowEvent', pointer: `${S}WorkflowEvent` },
  { name: 'StreamSnapshot', pointer: `${S}StreamSnapshot` },
  { name: 'EventList', pointer: `${S}EventList` },
  { name: 'WorkflowSummary', pointer: `${S}WorkflowList/properties/workflows/items` },
  { name: 'FsmDocument', pointer: `${S}FsmDocument` },
  { name: 'DiagramDocument', pointer: `${S}DiagramDocument` },
  { name: 'PlannerKindInfo', pointer: `${S}PlannerList/properties/planners/items` },
  { name: 'Command', pointer: `${S}Command` },
  { name: 'ErrorBody', pointer: `${S}ErrorBody` },
  { name: 'CreateWorkflowBody', pointer: `${S}CreateWorkflowRequest`, request: true },
  { name: 'HoldAnswer', pointer: `${S}HoldAnswer` },
  { name: 'MergeAnswer', pointer: `${S}MergeAnswer` }
];

const checker = new TypeChecker(path.join(SRC, 'types.ts'));

function mismatches(doc: Schema): string[] {
  return ROOTS.flatMap(root => checker.check(root, doc));
}

function edited(edit: (schemas: Schema) => void): Schema {
  const copy = JSON.parse(JSON.stringify(OPENAPI));
  edit(copy.components.schemas);
  return copy;
}

describe('the panel types against openapi.json', () => {
  it('match every type the panel reads', () => {
    assert.deepEqual(mismatches(OPENAPI), []);
  });

  it('cover every type types.ts exports', () => {
    mismatches(OPENAPI);
    const unchecked = checker.exportedTypes().filter(name => !checker.visited.has(name));
    assert.deepEqual(unchecked, []);
  });

  it('fail on a renamed field', () => {
    const doc = edited(s => {
      const props = s.WorkflowEvent.properties;
      props.status = props.run_status;
      delete props.run_status;
      s.WorkflowEvent.required = s.WorkflowEvent.required.map((n: string) => (n === 'run_status' ? 'status' : n));
    });
    assert.ok(mismatches(doc).some(m => m.startsWith('WorkflowEvent.run_status: missing')), mismatches(doc).join('\n'));
  });

  it('fail on a retyped field', () => {
    const doc = edited(s => {
      s.WorkflowSnapshot.properties.version = { type: 'string' };
    });
    assert.ok(mismatches(doc).some(m => m.startsWith('WorkflowSnapshot.version: number in the panel')));
  });

  it('fail on an enum value the panel does not know', () => {
    const doc = edited(s => {
      s.RunBlock.properties.status.enum.push('sleeping');
    });
    assert.ok(mismatches(doc).some(m => m.includes('also sends "sleeping"')), mismatches(doc).join('\n'));
  });
});
