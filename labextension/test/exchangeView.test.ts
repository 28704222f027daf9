/**
 * The "Planner exchange" cards (src/exchangeView.ts): tokens, latency and sizes in plain words,
 * truncation said, blueprint runs told apart.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { PlannerExchange, duration, exchangeCard, noExchangeText, tokenText } from '../src/exchangeView';

function row(extra: Partial<PlannerExchange> = {}): PlannerExchange {
  return {
    seq: 4,
    workflow_id: 'wf',
    planner_kind: 'llm',
    point: 'generate_actions',
    fsm_state: 'behavior_running',
    behavior_id: 'load_b1',
    iteration: 2,
    at: '2026-11-25T12:00:01.123456Z',
    latency_ms: 1234.5,
    calls: 1,
    prompt_tokens: 12345,
    completion_tokens: 67,
    request_summary: 'decision: generate_actions at behavior_running',
    request_bytes: 100,
    request_truncated: false,
    reply: '<actions/>',
    content_type: 'application/xml',
    reply_bytes: 10,
    reply_truncated: false,
    notes: [],
    error: null,
    ...extra
  };
}

describe('exchangeCard', () => {
  it('names the decision, the iteration, the tokens and the latency', () => {
    const card = exchangeCard(row());
    assert.equal(card.title, 'Actions (the cells) · iteration 2');
    assert.deepEqual(card.rows.slice(0, 2), [
      ['Tokens', '12,345 in · 67 out'],
      ['Latency', '1.2 s']
    ]);
    assert.deepEqual(card.rows[2], ['Time', '2026-11-25 12:00:01Z']);
    assert.deepEqual(card.rows[3], ['Reply', 'application/xml, 10 B']);
    assert.equal(card.reply, '<actions/>');
  });
  it('says when tokens were not reported and when parse retries took more replies', () => {
    const card = exchangeCard(row({ prompt_tokens: null, completion_tokens: null, calls: 3 }));
    assert.deepEqual(card.rows[0], ['Tokens', 'not reported']);
    assert.deepEqual(card.rows[1], ['Latency', '1.2 s (3 replies)']);
  });
  it('says a cut reply and a cut request summary were cut', () => {
    const card = exchangeCard(
      row({ reply_truncated: true, reply_bytes: 400000, request_truncated: true, request_bytes: 20480 })
    );
    assert.deepEqual(card.rows[3], ['Reply', 'application/xml, 390.6 kB (cut to fit; the start is kept)']);
    assert.match(card.summary, /… \(20\.0 kB in all; this is its start\)$/);
  });
  it('has no reply row for a failed call', () => {
    const card = exchangeCard(row({ reply: null, error: 'no usable reply' }));
    assert.equal(card.reply, null);
    assert.equal(card.error, 'no usable reply');
    assert.equal(card.rows.length, 3);
  });
});

describe('wording', () => {
  it('tells a blueprint run from an AI run without exchanges yet', () => {
    assert.match(noExchangeText('blueprint'), /planned by a blueprint/);
    assert.match(noExchangeText('llm'), /yet/);
  });
  it('formats durations and tokens', () => {
    assert.equal(duration(840.4), '840 ms');
    assert.equal(duration(65000), '1 min 05 s');
    assert.equal(tokenText(row({ prompt_tokens: 0, completion_tokens: 0 })), '0 in · 0 out');
  });
});
