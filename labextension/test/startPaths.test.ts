/**
 * Start-form paths (src/startPaths.ts): the notebook's folder, the blueprint beside it, and
 * input files relative to the notebook's folder.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { besideBlueprint, folderOf, inputPaths, isYaml, notebookRelative, pathHint, relativeFrom } from '../src/startPaths';

describe('folderOf / besideBlueprint', () => {
  it('names the folder and the workflow.yaml beside the notebook', () => {
    assert.equal(folderOf('Untitled.ipynb'), '');
    assert.equal(folderOf('a/b/n.ipynb'), 'a/b');
    assert.equal(besideBlueprint('Untitled.ipynb'), 'workflow.yaml');
    assert.equal(besideBlueprint('projects/housing/n.ipynb'), 'projects/housing/workflow.yaml');
  });
});

describe('isYaml', () => {
  it('accepts .yaml and .yml in any case, nothing else', () => {
    for (const name of ['w.yaml', 'w.YML', 'a/b.Yaml']) {
      assert.equal(isYaml(name), true, name);
    }
    for (const name of ['w.ipynb', 'w.yaml.bak', 'yaml', 'w.json']) {
      assert.equal(isYaml(name), false, name);
    }
  });
});

describe('relativeFrom', () => {
  it('walks down, up and across', () => {
    assert.equal(relativeFrom('', 'data/x.csv'), 'data/x.csv');
    assert.equal(relativeFrom('a', 'a/data/x.csv'), 'data/x.csv');
    assert.equal(relativeFrom('a/b', 'c/d.csv'), '../../c/d.csv');
    assert.equal(relativeFrom('a/b', 'a/x.csv'), '../x.csv');
    assert.equal(relativeFrom('a/b', 'a/bc/x.csv'), '../bc/x.csv');
    assert.equal(relativeFrom('a', 'a'), '.');
  });
});

describe('notebookRelative / pathHint', () => {
  it('names one path from the notebook\'s folder, as the hint says', () => {
    assert.equal(notebookRelative('proj/n.ipynb', ' workflow.yaml '), 'workflow.yaml');
    assert.equal(notebookRelative('proj/n.ipynb', './flows/w.yaml'), 'flows/w.yaml');
    assert.equal(notebookRelative('proj/n.ipynb', '/proj/w.yaml'), 'w.yaml');
    assert.equal(notebookRelative('proj/n.ipynb', '/other/w.yaml'), '../other/w.yaml');
    assert.equal(notebookRelative('proj/n.ipynb', ' / '), '');
    assert.equal(
      pathHint('proj/n.ipynb'),
      "Relative to the notebook's folder (proj/); start with / to name a path from the server root."
    );
    assert.match(pathHint('n.ipynb'), /notebook's folder \(the server root\)/);
  });
});

describe('inputPaths', () => {
  it('keeps relative entries, rewrites root entries, drops blanks and duplicates', () => {
    assert.deepEqual(
      inputPaths('proj/n.ipynb', ' data/a.csv, /proj/data/a.csv\n./data/b.csv,, /shared/c.csv \n'),
      ['data/a.csv', 'data/b.csv', '../shared/c.csv']
    );
    assert.deepEqual(inputPaths('n.ipynb', '/data/a.csv, /'), ['data/a.csv']);
    assert.deepEqual(inputPaths('n.ipynb', '  \n , '), []);
    assert.deepEqual(inputPaths('n.ipynb', '../up.csv'), ['../up.csv']);
  });
});

/** ``folder`` joined with ``relative`` and normalized, as the server's join_api does. */
function join(folder: string, relative: string): string {
  const out = folder ? folder.split('/') : [];
  for (const part of relative.split('/')) {
    if (part === '..') {
      out.pop();
    } else if (part && part !== '.') {
      out.push(part);
    }
  }
  return out.join('/');
}

describe('relativeFrom, property', () => {
  it('joined back onto the folder names the target again (seeded random trees)', () => {
    let seed = 20;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const names = ['a', 'b', 'ab', 'data', 'x y'];
    const path = (): string =>
      Array.from({ length: next(4) }, () => names[next(names.length)]).join('/');
    for (let i = 0; i < 500; i++) {
      const folder = path();
      const target = path() || 'f.csv';
      const relative = relativeFrom(folder, target);
      assert.equal(join(folder, relative), target, `${folder} -> ${target} via ${relative}`);
      // and the start form's field turns a root path into that same relative path
      assert.deepEqual(inputPaths(`${folder ? `${folder}/` : ''}n.ipynb`, `/${target}`), [relative]);
    }
  });
});
