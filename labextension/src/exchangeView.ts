/**
 * Pure view logic of the "Planner exchange" section (no DOM): what a behavior's planner
 * exchanges (``GET /workflows/{id}/exchanges?behavior=``) read as in the panel.
 */

/** One exchange as the server sends it (``PlannerExchange``). */
export interface PlannerExchange {
  seq: number;
  workflow_id: string;
  planner_kind: string;
  point: string;
  fsm_state: string;
  stage_id?: string | null;
  step_id?: string | null;
  behavior_id?: string | null;
  iteration?: number | null;
  at: string;
  latency_ms: number;
  calls: number;
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  request_summary: string;
  request_bytes: number;
  request_truncated: boolean;
  reply?: string | null;
  content_type?: string | null;
  reply_bytes: number;
  reply_truncated: boolean;
  notes: string[];
  error?: string | null;
}

/** ``GET /workflows/{id}/exchanges``. */
export interface ExchangeList {
  workflow_id: string;
  planner_kind: string;
  behavior?: string | null;
  exchanges: PlannerExchange[];
  truncated: boolean;
}

/** What the panel shows for one exchange. */
export interface ExchangeCard {
  title: string;
  rows: Array<[string, string]>;
  notes: string[];
  error: string | null;
  summary: string;
  reply: string | null;
}

const POINT_TITLES: Record<string, string> = {
  plan_stages: 'Stage plan',
  plan_steps: 'Step plan',
  plan_behavior: 'Behavior plan',
  generate_actions: 'Actions (the cells)',
  reflect_behavior: 'Behavior reflection',
  reflect_stage: 'Stage reflection',
  route_stage: 'Next stage'
};

/** Planner kinds that have no exchange to show. */
export function hasNoExchanges(plannerKind: string): boolean {
  return plannerKind === 'blueprint';
}

/** The sentence shown instead of exchanges for a planner that has none. */
export function noExchangeText(plannerKind: string): string {
  return hasNoExchanges(plannerKind)
    ? 'No planner exchange: this run is planned by a blueprint, not by an AI planner.'
    : 'No planner exchange recorded for this behavior yet.';
}

/** ``1234`` -> ``"1,234"`` (grouped, locale-free so tests are stable). */
export function grouped(value: number): string {
  return String(Math.round(value)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Milliseconds as people read them: ``"840 ms"``, ``"2.4 s"``, ``"1 min 05 s"``. */
export function duration(ms: number): string {
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  const seconds = ms / 1000;
  if (seconds < 60) {
    return `${seconds.toFixed(1)} s`;
  }
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, '0')} s`;
}

/** Bytes as people read them. */
export function size(bytes: number): string {
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  return `${(bytes / 1024).toFixed(1)} kB`;
}

/** The tokens line: ``"1,200 in · 85 out"`` or ``"not reported"``. */
export function tokenText(row: PlannerExchange): string {
  if (row.prompt_tokens === null || row.prompt_tokens === undefined) {
    if (row.completion_tokens === null || row.completion_tokens === undefined) {
      return 'not reported';
    }
  }
  return `${grouped(row.prompt_tokens ?? 0)} in · ${grouped(row.completion_tokens ?? 0)} out`;
}

/** The card of one exchange. */
export function exchangeCard(row: PlannerExchange): ExchangeCard {
  const title =
    (POINT_TITLES[row.point] ?? row.point) + (row.iteration ? ` · iteration ${row.iteration}` : '');
  const rows: Array<[string, string]> = [
    ['Tokens', tokenText(row)],
    ['Latency', duration(row.latency_ms) + (row.calls > 1 ? ` (${row.calls} replies)` : '')],
    ['Time', row.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')]
  ];
  if (row.reply !== null && row.reply !== undefined) {
    rows.push([
      'Reply',
      `${row.content_type ?? 'text'}, ${size(row.reply_bytes)}` +
        (row.reply_truncated ? ' (cut to fit; the start is kept)' : '')
    ]);
  }
  const summary =
    row.request_summary +
    (row.request_truncated ? `\n… (${size(row.request_bytes)} in all; this is its start)` : '');
  return {
    title,
    rows,
    notes: row.notes,
    error: row.error ?? null,
    summary,
    reply: row.reply ?? null
  };
}
