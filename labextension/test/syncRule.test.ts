/**
 * The notebook-sync rule (src/syncRule.ts): when the file on the server is newer than the
 * open document, revert a clean document and only notify about a dirty one.
 *
 * (A collaborative document is left alone before this rule is asked: that check lives in
 * src/sync.ts, which needs JupyterLab, so it is not covered here.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { shouldReload } from '../src/syncRule';

const OPEN = '2026-11-22T03:32:52.000Z';
const NEWER = '2026-11-22T03:32:53.386Z';
const OLDER = '2026-11-22T03:30:00.000Z';

describe('shouldReload', () => {
  it('reverts a clean document when the file on disk is newer', () => {
    assert.equal(shouldReload(NEWER, OPEN, false), 'revert');
  });

  it('only notifies about a dirty document, so no edit is lost', () => {
    assert.equal(shouldReload(NEWER, OPEN, true), 'notice');
  });

  it('does nothing when the file is not newer, dirty or not', () => {
    for (const dirty of [false, true]) {
      assert.equal(shouldReload(OPEN, OPEN, dirty), 'none', `same time, dirty=${dirty}`);
      assert.equal(shouldReload(OLDER, OPEN, dirty), 'none', `older, dirty=${dirty}`);
    }
  });

  it('compares instants, not strings', () => {
    // the same instant in another zone: not newer
    assert.equal(shouldReload('2026-11-22T04:32:52+01:00', OPEN, false), 'none');
    // one millisecond later is newer
    assert.equal(shouldReload('2026-11-22T03:32:52.001Z', OPEN, false), 'revert');
    // sorts after OPEN as a string, but is an hour earlier
    assert.equal(shouldReload('2026-11-22T03:32:53+01:00', OPEN, false), 'none');
  });

  it('does nothing while the time on disk is unknown', () => {
    for (const disk of [null, undefined, '', 'not a date']) {
      assert.equal(shouldReload(disk, OPEN, false), 'none', String(disk));
      assert.equal(shouldReload(disk, OPEN, true), 'none', String(disk));
      assert.equal(shouldReload(disk, null, false), 'none', String(disk));
    }
  });

  it('treats an unknown open time as older than the file on disk', () => {
    for (const open of [null, undefined, '', 'garbage']) {
      assert.equal(shouldReload(NEWER, open, false), 'revert', String(open));
      assert.equal(shouldReload(NEWER, open, true), 'notice', String(open));
    }
  });
});
