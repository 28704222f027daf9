/**
 * Time per stage, step and behavior (src/timing.ts) from cell times, across visits and
 * iterations, with a running cell counted up to ``now``.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { cellMark, type CellMark } from '../src/navigate';
import { formatDuration, nodeTimes, timeKey, visitTimeKey } from '../src/timing';

const T0 = Date.parse('2026-11-25T10:00:00Z');

function at(seconds: number): string {
  return new Date(T0 + seconds * 1000).toISOString();
}

function cell(
  index: number,
  where: [string, string, string],
  created: number,
  ended: number | null,
  extra: Record<string, unknown> = {}
): CellMark {
  const [stage_id, step_id, behavior_id] = where;
  return cellMark(index, {
    stage_id,
    step_id,
    behavior_id,
    visit: 1,
    iteration: 1,
    status: ended === null ? 'running' : 'ok',
    created_at: at(created),
    started_at: ended === null ? at(created) : at(created + 0.5),
    ended_at: ended === null ? null : at(ended),
    ...extra
  }) as CellMark;
}

describe('nodeTimes', () => {
  it('spans first creation to last end per node', () => {
    const times = nodeTimes(
      [
        cell(0, ['explore', 'look', 'b1'], 0, 2),
        cell(1, ['explore', 'look', 'b1'], 3, 5),
        cell(2, ['explore', 'look', 'b2'], 6, 10),
        cell(3, ['model', 'fit', 'b1'], 20, 21.5)
      ],
      T0 + 999_000
    );
    assert.deepEqual(times.get(timeKey('explore', 'look', 'b1')), { seconds: 5, running: false });
    assert.deepEqual(times.get(timeKey('explore', 'look', 'b2')), { seconds: 4, running: false });
    assert.deepEqual(times.get(timeKey('explore', 'look')), { seconds: 10, running: false });
    assert.deepEqual(times.get(timeKey('explore')), { seconds: 10, running: false });
    assert.deepEqual(times.get('model'), { seconds: 1.5, running: false });
    assert.equal(times.get('nowhere'), undefined);
  });

  it('leaves out the time a cell waited for a human to confirm it', () => {
    // an irreversible export created at 3 s, confirmed 600 s later, done 1 s after that
    const times = nodeTimes(
      [
        cell(0, ['report', 'save', 'b1'], 0, 2),
        cell(1, ['report', 'save', 'b1'], 3, 604, { waited_s: 600 }),
        cell(2, ['report', 'save', 'b2'], 605, 606)
      ],
      T0 + 999_000
    );
    assert.equal(times.get('report/save/b1')?.seconds, 4);
    assert.equal(times.get('report/save/b2')?.seconds, 1);
    assert.equal(times.get('report/save')?.seconds, 6);
    assert.equal(times.get('report')?.seconds, 6);
    // a bad value counts as no wait
    const odd = nodeTimes([cell(0, ['r', 's', 'b'], 0, 2, { waited_s: 'x' })], T0);
    assert.equal(odd.get('r')?.seconds, 2);
  });

  it('sums visits and iterations instead of counting the time between them', () => {
    const times = nodeTimes(
      [
        cell(0, ['explore', 'look', 'b1'], 0, 2, { visit: 1 }),
        cell(1, ['model', 'fit', 'b1'], 2, 100, { iteration: 1 }),
        cell(2, ['model', 'fit', 'b1'], 100, 110, { iteration: 2 }),
        cell(3, ['explore', 'look', 'b1'], 200, 203, { visit: 2 })
      ],
      T0
    );
    assert.equal(times.get('explore')?.seconds, 5);
    assert.equal(times.get('explore/look/b1')?.seconds, 5);
    assert.equal(times.get('model/fit/b1')?.seconds, 108);
  });

  it('gives each visit of a re-entered stage its own time, and its steps and behaviors', () => {
    // the plan lists "explore" once per visit: the first took 5 s, the second 3 s
    const times = nodeTimes(
      [
        cell(0, ['explore', 'look', 'b1'], 0, 2, { visit: 1 }),
        cell(1, ['explore', 'look', 'b1'], 3, 5, { visit: 1 }),
        cell(2, ['model', 'fit', 'b1'], 6, 20),
        cell(3, ['explore', 'look', 'b1'], 200, 201, { visit: 2 }),
        cell(4, ['explore', 'look', 'b1'], 201, 201, { visit: 2, iteration: 2 }),
        cell(5, ['explore', 'look', 'b1'], 201, 203, { visit: 2, iteration: 2 })
      ],
      T0
    );
    assert.equal(times.get(visitTimeKey(1, 'explore'))?.seconds, 5);
    assert.equal(times.get(visitTimeKey(2, 'explore'))?.seconds, 3);
    assert.equal(times.get(visitTimeKey(2, 'explore', 'look'))?.seconds, 3);
    assert.equal(times.get(visitTimeKey(2, 'explore', 'look', 'b1'))?.seconds, 3);
    assert.equal(times.get(visitTimeKey(1, 'model'))?.seconds, 14);
    assert.equal(times.get(timeKey('explore'))?.seconds, 8); // over both visits
    assert.equal(times.get(visitTimeKey(3, 'explore')), undefined);
  });

  it('counts a running cell up to now and marks its ancestors running', () => {
    const times = nodeTimes(
      [cell(0, ['explore', 'look', 'b1'], 0, 2), cell(1, ['explore', 'look', 'b1'], 4, null)],
      T0 + 30_000
    );
    assert.deepEqual(times.get('explore/look/b1'), { seconds: 30, running: true });
    assert.deepEqual(times.get('explore'), { seconds: 30, running: true });
  });

  it('skips cells without a stage or readable times', () => {
    const noStage = cellMark(0, { created_at: at(0), ended_at: at(5) }) as CellMark;
    const badTimes = cellMark(1, { stage_id: 's', created_at: 'yesterday' }) as CellMark;
    assert.equal(nodeTimes([noStage, badTimes], T0).size, 0);
  });
});

describe('formatDuration', () => {
  it('reads at every scale', () => {
    assert.equal(formatDuration(0), '0.0 s');
    assert.equal(formatDuration(0.44), '0.4 s');
    assert.equal(formatDuration(12.4), '12 s');
    assert.equal(formatDuration(185), '3 min 05 s');
    assert.equal(formatDuration(3720), '1 h 02 min');
    assert.equal(formatDuration(-1), '–');
    assert.equal(formatDuration(Number.NaN), '–');
  });
});
