/**
 * The start form's memory (src/startMemory.ts): last values per notebook, robust to whatever
 * else is in storage.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import {
  memoryKey,
  moveStart,
  recallStart,
  rememberStart,
  type KeyValueStore
} from '../src/startMemory';

class MapStore implements KeyValueStore {
  readonly data = new Map<string, string>();
  getItem(key: string): string | null {
    return this.data.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.data.set(key, value);
  }
  removeItem(key: string): void {
    this.data.delete(key);
  }
}

const FIELDS = {
  kind: 'blueprint' as const,
  values: { blueprint: 'proj/workflow.yaml' },
  problem: 'Predict prices',
  files: 'data/a.csv',
  autoConfirm: true,
  confirmIrreversible: false
};

describe('rememberStart / recallStart', () => {
  it('round-trips per notebook and keeps notebooks apart', () => {
    const store = new MapStore();
    rememberStart(store, 'proj/a.ipynb', FIELDS);
    assert.deepEqual(recallStart(store, 'proj/a.ipynb'), FIELDS);
    assert.equal(recallStart(store, 'proj/b.ipynb'), null);
    rememberStart(store, 'proj/a.ipynb', { ...FIELDS, problem: 'second' });
    assert.equal(recallStart(store, 'proj/a.ipynb')?.problem, 'second');
  });

  it('reads paths remembered before the form named them from the notebook as root paths', () => {
    const store = new MapStore();
    store.setItem(memoryKey('proj/a.ipynb'), JSON.stringify(FIELDS)); // no paths: 'notebook'
    assert.deepEqual(recallStart(store, 'proj/a.ipynb')?.values, { blueprint: '/proj/workflow.yaml' });
    rememberStart(store, 'proj/a.ipynb', { ...FIELDS, values: { blueprint: 'workflow.yaml' } });
    assert.deepEqual(recallStart(store, 'proj/a.ipynb')?.values, { blueprint: 'workflow.yaml' });
  });

  it('ignores what it cannot trust', () => {
    const store = new MapStore();
    const key = memoryKey('n.ipynb');
    for (const bad of ['{not json', '42', 'null', '{"kind":"oracle"}', 'x'.repeat(200_000)]) {
      store.setItem(key, bad);
      assert.equal(recallStart(store, 'n.ipynb'), null, bad.slice(0, 20));
    }
    store.setItem(key, JSON.stringify({ kind: 'llm', values: { model: 'm', n: 3 }, problem: 7 }));
    assert.deepEqual(recallStart(store, 'n.ipynb'), {
      kind: 'llm',
      values: { model: 'm' },
      problem: '',
      files: '',
      autoConfirm: false,
      confirmIrreversible: true
    });
    assert.equal(recallStart(null, 'n.ipynb'), null);
  });

  it('survives a store that throws', () => {
    const throwing: KeyValueStore = {
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('quota');
      },
      removeItem: () => {
        throw new Error('denied');
      }
    };
    rememberStart(throwing, 'n.ipynb', FIELDS);
    assert.equal(recallStart(throwing, 'n.ipynb'), null);
  });
});

describe('moveStart', () => {
  it('moves the values with a renamed notebook and frees the old name', () => {
    const store = new MapStore();
    rememberStart(store, 'Untitled.ipynb', FIELDS);
    moveStart(store, 'Untitled.ipynb', 'houses.ipynb');
    assert.deepEqual(recallStart(store, 'houses.ipynb'), FIELDS);
    assert.equal(recallStart(store, 'Untitled.ipynb'), null, 'a new Untitled.ipynb starts empty');
  });

  it('changes nothing for a notebook with nothing remembered, or blocked storage', () => {
    const store = new MapStore();
    rememberStart(store, 'b.ipynb', FIELDS);
    moveStart(store, 'a.ipynb', 'b.ipynb');
    assert.deepEqual(recallStart(store, 'b.ipynb'), FIELDS, 'b keeps its own values');
    moveStart(null, 'a.ipynb', 'c.ipynb');
    const blocked: KeyValueStore = {
      getItem: () => {
        throw new Error('blocked');
      },
      setItem: () => undefined,
      removeItem: () => undefined
    };
    moveStart(blocked, 'a.ipynb', 'c.ipynb');
  });
});
