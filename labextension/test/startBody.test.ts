/**
 * The start form -> ``POST /workflows`` body (src/startBody.ts): the files field split into
 * paths and each planner kind's fields checked and shaped.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { buildStartBody, startErrorMessage, splitPaths, type StartFields } from '../src/startBody';

function fields(overrides: Partial<StartFields>): StartFields {
  return {
    kind: 'blueprint',
    values: {},
    problem: '',
    files: '',
    autoConfirm: false,
    confirmIrreversible: true,
    ...overrides
  };
}

describe('splitPaths', () => {
  it('splits on commas and newlines, trimming each path', () => {
    assert.deepEqual(splitPaths(' data/a.csv, data/b.csv\n  data/c.csv  '), [
      'data/a.csv',
      'data/b.csv',
      'data/c.csv'
    ]);
  });

  it('ignores blank entries', () => {
    assert.deepEqual(splitPaths(''), []);
    assert.deepEqual(splitPaths('  ,\n , \n\n'), []);
    assert.deepEqual(splitPaths('a.csv,,\n\n,b.csv,'), ['a.csv', 'b.csv']);
  });

  it('handles Windows line ends', () => {
    assert.deepEqual(splitPaths('a.csv\r\nb.csv\r\n'), ['a.csv', 'b.csv']);
  });

  it('makes paths relative to the server root and drops duplicates, first one first', () => {
    assert.deepEqual(splitPaths('/data/a.csv, b.csv, //data/a.csv, data/a.csv, b.csv'), [
      'data/a.csv',
      'b.csv'
    ]);
    assert.deepEqual(splitPaths('/, //'), []);
  });

  it('keeps spaces inside a path', () => {
    assert.deepEqual(splitPaths('my data/house prices.csv'), ['my data/house prices.csv']);
  });
});

describe('buildStartBody', () => {
  it('builds a blueprint body with files, options and the trimmed problem', () => {
    const result = buildStartBody(
      'notebooks/housing.ipynb',
      fields({
        kind: 'blueprint',
        values: { blueprint: '  /examples/housing/workflow.yaml ', url: 'http://ignored' },
        problem: '  Predict house prices \n',
        files: 'data/housing.csv\n/extra.csv, ./data/housing.csv',
        autoConfirm: true,
        confirmIrreversible: false
      })
    );
    assert.deepEqual(result, {
      body: {
        notebook_path: 'notebooks/housing.ipynb',
        planner: { kind: 'blueprint', path: '../examples/housing/workflow.yaml' },
        files: ['data/housing.csv', '../extra.csv'],
        files_relative_to: 'notebook',
        planner_paths_relative_to: 'notebook',
        options: { auto_confirm: true, confirm_irreversible: false },
        problem: 'Predict house prices'
      }
    });
  });

  it('names the blueprint and the input files from the same folder: the notebook\'s', () => {
    const result = buildStartBody(
      'proj/a.ipynb',
      fields({ values: { blueprint: ' ./workflow.yaml ' }, files: 'data/x.csv' })
    );
    assert.ok('body' in result);
    assert.deepEqual(result.body.planner, { kind: 'blueprint', path: 'workflow.yaml' });
    assert.deepEqual(result.body.files, ['data/x.csv']);
    assert.equal(result.body.files_relative_to, 'notebook');
    assert.equal(result.body.planner_paths_relative_to, 'notebook');
    const fromRoot = buildStartBody('proj/a.ipynb', fields({ values: { blueprint: '/proj/workflow.yaml' } }));
    assert.ok('body' in fromRoot);
    assert.deepEqual(fromRoot.body.planner, { kind: 'blueprint', path: 'workflow.yaml' });
  });

  it('leaves a blank problem out', () => {
    const result = buildStartBody(
      'a.ipynb',
      fields({ values: { blueprint: 'flow.yml' }, problem: ' \n ' })
    );
    assert.ok('body' in result);
    assert.equal('problem' in result.body, false);
    assert.deepEqual(result.body.files, []);
    assert.deepEqual(result.body.planner, { kind: 'blueprint', path: 'flow.yml' });
  });

  it('requires a .yaml / .yml blueprint', () => {
    assert.deepEqual(buildStartBody('a.ipynb', fields({ values: {} })), {
      error: 'Blueprint is required.'
    });
    assert.deepEqual(buildStartBody('a.ipynb', fields({ values: { blueprint: '   ' } })), {
      error: 'Blueprint is required.'
    });
    assert.deepEqual(
      buildStartBody('a.ipynb', fields({ values: { blueprint: ' workflow.json ' } })),
      { error: 'Blueprint: workflow.json is not a .yaml file.' }
    );
    assert.deepEqual(
      buildStartBody('a.ipynb', fields({ values: { blueprint: 'workflow.yaml.bak' } })),
      { error: 'Blueprint: workflow.yaml.bak is not a .yaml file.' }
    );
    assert.ok('body' in buildStartBody('a.ipynb', fields({ values: { blueprint: 'FLOW.YML' } })));
  });

  it('builds a replay body from the recording folder', () => {
    const result = buildStartBody(
      'a.ipynb',
      fields({ kind: 'replay', values: { transcript: ' /examples/housing-ai/recording ' } })
    );
    assert.ok('body' in result);
    assert.deepEqual(result.body.planner, {
      kind: 'replay',
      path: 'examples/housing-ai/recording'
    });
    assert.deepEqual(buildStartBody('a.ipynb', fields({ kind: 'replay', values: {} })), {
      error: 'Recording folder is required.'
    });
  });

  it('builds an http body and checks the URL scheme', () => {
    const result = buildStartBody(
      'a.ipynb',
      fields({ kind: 'http', values: { url: ' https://planner.example/api ' } })
    );
    assert.ok('body' in result);
    assert.deepEqual(result.body.planner, { kind: 'http', url: 'https://planner.example/api' });
    const upper = buildStartBody(
      'a.ipynb',
      fields({ kind: 'http', values: { url: 'HTTPS://Planner.example/api' } })
    );
    assert.ok('body' in upper, JSON.stringify(upper));
    assert.deepEqual(buildStartBody('a.ipynb', fields({ kind: 'http', values: {} })), {
      error: 'Server URL is required.'
    });
    assert.deepEqual(
      buildStartBody('a.ipynb', fields({ kind: 'http', values: { url: 'ftp://planner' } })),
      { error: 'Server URL must start with http:// or https://.' }
    );
    assert.deepEqual(
      buildStartBody('a.ipynb', fields({ kind: 'http', values: { url: 'planner.example' } })),
      { error: 'Server URL must start with http:// or https://.' }
    );
  });

  it('builds an llm body, with the base URL only when given', () => {
    const plain = buildStartBody('a.ipynb', fields({ kind: 'llm', values: { model: ' gpt-x ' } }));
    assert.ok('body' in plain);
    assert.deepEqual(plain.body.planner, { kind: 'llm', model: 'gpt-x' });
    const withBase = buildStartBody(
      'a.ipynb',
      fields({ kind: 'llm', values: { model: 'gpt-x', base_url: ' http://localhost:8000/v1 ' } })
    );
    assert.ok('body' in withBase);
    assert.deepEqual(withBase.body.planner, {
      kind: 'llm',
      model: 'gpt-x',
      base_url: 'http://localhost:8000/v1'
    });
    assert.deepEqual(
      buildStartBody('a.ipynb', fields({ kind: 'llm', values: { base_url: 'http://x' } })),
      { error: 'Model is required.' }
    );
    assert.deepEqual(
      buildStartBody(
        'a.ipynb',
        fields({ kind: 'llm', values: { model: 'gpt-x', base_url: 'localhost:8000' } })
      ),
      { error: 'Base URL must start with http:// or https://.' }
    );
  });

  it('passes an llm template folder as an API path without its trailing slash', () => {
    const result = buildStartBody(
      'a.ipynb',
      fields({ kind: 'llm', values: { model: 'gpt-x', templates: ' team/prompts/ ' } })
    );
    assert.ok('body' in result);
    assert.deepEqual(result.body.planner, { kind: 'llm', model: 'gpt-x', templates: 'team/prompts' });
    const blank = buildStartBody('a.ipynb', fields({ kind: 'llm', values: { model: 'gpt-x', templates: '  ' } }));
    assert.ok('body' in blank);
    assert.deepEqual(blank.body.planner, { kind: 'llm', model: 'gpt-x' });
  });

  it('leads a refusal with the label of the field it is about', () => {
    const missing =
      "planner.path: no such file 'wf.yaml' (looked for 'proj/wf.yaml'); paths here are " +
      "relative to the notebook's folder 'proj'";
    assert.equal(
      startErrorMessage('blueprint', missing, { field: 'planner.path', path: 'proj/wf.yaml' }),
      "Blueprint: no such file 'wf.yaml' (looked for 'proj/wf.yaml'); paths here are relative " +
        "to the notebook's folder 'proj'"
    );
    assert.match(startErrorMessage('replay', missing, { field: 'planner.path' }), /^Recording folder: no such/);
    const files =
      "input files not found: files[0]: no such file 'a.csv' (looked for 'p/a.csv'); paths " +
      "here are relative to the notebook's folder 'p'; files[1]: no such file 'b.csv'";
    assert.equal(
      startErrorMessage('http', files, { field: 'files', missing: ['p/a.csv', 'b.csv'] }),
      "Input files: no such file 'a.csv' (looked for 'p/a.csv'); paths here are relative to the " +
        "notebook's folder 'p'; no such file 'b.csv'"
    );
    assert.equal(startErrorMessage('blueprint', 'planner: busy', {}), 'planner: busy');
    assert.equal(startErrorMessage('blueprint', 'planner: busy'), 'planner: busy');
  });

  it('refuses an unknown planner kind', () => {
    const kind = 'magic' as unknown as StartFields['kind'];
    assert.deepEqual(buildStartBody('a.ipynb', fields({ kind, values: { blueprint: 'a.yaml' } })), {
      error: 'Unknown planner kind magic.'
    });
  });
});
