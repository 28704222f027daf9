/**
 * Pure view logic: the timeline of D4 events, planner usage, the live connection's backoff
 * and diagram sizes. Re-exported by ``view.ts``.
 */
import type {
  PendingKind,
  RunStatus,
  UsageTotals,
  WorkflowEvent,
  WorkflowSnapshot
} from './types';
import { humanState } from './viewPlan';
import { DECISION_TITLES } from './viewDecisions';

// -- timeline ----------------------------------------------------------------------------

export const TIMELINE_LIMIT = 200;

/** Adds events to a timeline (oldest first), dropping duplicates and the oldest overflow. */
export function mergeEvents(
  timeline: WorkflowEvent[],
  incoming: WorkflowEvent[],
  limit = TIMELINE_LIMIT
): WorkflowEvent[] {
  const seen = new Set(timeline.map(e => e.seq));
  const merged = [...timeline];
  for (const event of incoming) {
    if (!seen.has(event.seq)) {
      seen.add(event.seq);
      merged.push(event);
    }
  }
  merged.sort((a, b) => a.seq - b.seq);
  return merged.slice(-limit);
}

/**
 * Adds the stored events (``GET /events``) to a timeline. They replace the transitions made
 * up from the snapshot's history tail (``historyEvents``, seq <= 0), which they contain
 * with their cell, contract, decision and run events besides.
 */
export function withStoredEvents(
  timeline: WorkflowEvent[],
  stored: WorkflowEvent[],
  limit = TIMELINE_LIMIT
): WorkflowEvent[] {
  if (stored.length === 0) {
    return timeline;
  }
  return mergeEvents(
    timeline.filter(event => event.seq > 0),
    stored,
    limit
  );
}

/** One readable line per D4 event. */
export function eventText(event: WorkflowEvent): string {
  const detail = event.detail ?? {};
  switch (event.kind) {
    case 'transition':
      return `${humanState(event.from ?? '?')} → ${humanState(event.to ?? '?')} (${event.event ?? ''})`;
    case 'run':
      if (event.event && !event.to && !event.from) {
        return runNote(event.event, detail);
      }
      return runText(event.from ?? null, event.to ?? event.run_status ?? null, detail['reason']);
    case 'cell': {
      const type = typeof detail['cell_type'] === 'string' ? `${detail['cell_type']} ` : '';
      const position = typeof detail['position'] === 'number' ? ` #${detail['position'] + 1}` : '';
      return `${type}cell written${position}`;
    }
    case 'decision': {
      const kind = typeof detail['kind'] === 'string' ? detail['kind'] : 'decision';
      const title = DECISION_TITLES[kind as PendingKind] ?? humanState(kind);
      return `${title} ${event.event ?? ''}`.trim();
    }
    case 'contract': {
      const action = typeof detail['action'] === 'string' ? detail['action'] : '';
      // "transition:c-1a2b:running→completed": the states in words, spaced so a narrow panel
      // wraps between them (the contract id says nothing to a reader)
      const move = /^(?:transition|create_contract):[^:]+:(\w+)\s*→\s*(\w+)$/.exec(action);
      if (move) {
        return `contract ${event.event ?? ''}: ${humanState(move[1])} → ${humanState(move[2])}`;
      }
      return `contract ${event.event ?? ''} ${action.replace(/^[a-z_]+:/, '')}`.trim();
    }
    default:
      return String(event.kind);
  }
}

/**
 * A note on the run that is not a status change: a rename, a kernel restored after it was
 * lost or restarted, a retry, a stage route. (They used to read "Run started".)
 */
export function runNote(name: string, detail: Record<string, unknown>): string {
  const text = (key: string): string => String(detail[key] ?? '?');
  switch (name) {
    case 'notebook_moved':
      return `Notebook renamed: ${text('from')} → ${text('notebook_path')}`;
    case 'kernel_restored': {
      const replayed = Number(detail['replayed'] ?? 0);
      const skipped = Number(detail['skipped'] ?? 0);
      const parts = [`${replayed} cell${replayed === 1 ? '' : 's'} replayed`];
      if (skipped) {
        parts.push(`${skipped} irreversible skipped`);
      }
      if (detail['failed']) {
        parts.push(`replay failed at ${text('failed')}`);
      }
      return `Kernel restored (it had stopped or restarted): ${parts.join(', ')}`;
    }
    case 'retry':
      return detail['stage'] ? `Retry from stage ${text('stage')}` : 'Retry';
    case 'restart':
      return detail['stage'] ? `Restart from stage ${text('stage')}` : 'Restart';
    case 'route': {
      const end = detail['end'] ? String(detail['end']) : 'the end';
      return `Stage ${text('stage')} (${text('outcome')}) → ${end}`;
    }
    case 'abandon':
      return detail['reason'] ? `Run abandoned: ${text('reason')}` : 'Run abandoned';
    default:
      return `Run: ${name.replace(/_/g, ' ')}`;
  }
}

/** What a run status change means, in words ("Run resumed", "Run waiting for you: ..."). */
export function runText(from: string | null, to: string | null, reason: unknown): string {
  const why = typeof reason === 'string' && reason ? `: ${reason}` : '';
  if (to === 'running') {
    return from === null || from === 'running' ? 'Run started' : `Run resumed (was ${from})`;
  }
  const words: Record<string, string> = {
    waiting: 'Run waiting for you',
    paused: 'Run paused',
    interrupted: 'Run interrupted',
    failed: 'Run failed',
    completed: 'Run completed',
    cancelled: 'Run cancelled'
  };
  return (to !== null && words[to] ? words[to] : `Run ${to ?? 'changed'}`) + why;
}

/** ``2026-11-22T03:32:53.38Z`` -> ``03:32:53`` (UTC). */
export function clock(at: string): string {
  const match = /T(\d\d:\d\d:\d\d)/.exec(at);
  return match ? match[1] : at;
}

/** Transitions of the snapshot's history tail as events (before the stream delivered any). */
export function historyEvents(snapshot: WorkflowSnapshot): WorkflowEvent[] {
  return snapshot.fsm.history.map((entry, index) => ({
    workflow_id: snapshot.workflow_id,
    seq: -snapshot.fsm.history.length + index,
    version: snapshot.version,
    at: entry.timestamp,
    kind: 'transition' as const,
    from: entry.from,
    event: entry.event,
    to: entry.to,
    actor: entry.actor,
    run_status: snapshot.run.status,
    detail: {}
  }));
}

// -- usage -------------------------------------------------------------------------------

export interface UsageRow {
  scope: string;
  calls: number;
  tokens: string;
  latency: string;
}

function usageRow(scope: string, totals: UsageTotals): UsageRow {
  const tokens = totals.prompt_tokens + totals.completion_tokens;
  return {
    scope,
    calls: totals.calls,
    tokens: tokens ? `${totals.prompt_tokens} + ${totals.completion_tokens}` : '—',
    latency:
      // 999.6 ms rounds to a second, so it reads "1.0 s", not "1000 ms"
      Math.round(totals.latency_ms) >= 1000
        ? `${(totals.latency_ms / 1000).toFixed(1)} s`
        : `${Math.round(totals.latency_ms)} ms`
  };
}

/** Planner usage in total and per stage; empty when the planner was never called. */
export function usageRows(snapshot: WorkflowSnapshot): UsageRow[] {
  const usage = snapshot.usage;
  if (!usage || !usage.calls) {
    return [];
  }
  const rows = [usageRow('Total', usage)];
  for (const [stage, totals] of Object.entries(usage.per_stage ?? {})) {
    rows.push(usageRow(stage === '_workflow' ? 'Planning' : stage, totals));
  }
  return rows;
}

// -- live connection ---------------------------------------------------------------------

/** Reconnect delay after ``attempt`` failures: exponential, capped, with jitter in [0, 1). */
export function backoffDelay(attempt: number, jitter: number, base = 500, cap = 15000): number {
  const exp = Math.min(cap, base * 2 ** Math.max(0, attempt));
  return Math.round(exp / 2 + (exp / 2) * Math.min(Math.max(jitter, 0), 1));
}

/** Whether a run status means the engine may still change the snapshot by itself. */
export function isActive(status: RunStatus): boolean {
  return status === 'running';
}

// -- diagrams ----------------------------------------------------------------------------

/**
 * The drawing size of an SVG given as a ``data:image/svg+xml`` URL (its viewBox, else its
 * width/height in px), or null. Mermaid sizes its SVG to "100%", which as an image falls back
 * to 300 px wide: the full-size view uses this instead.
 */
export function svgNaturalSize(src: string): { width: number; height: number } | null {
  const comma = src.indexOf(',');
  if (!src.startsWith('data:image/svg+xml') || comma < 0) {
    return null;
  }
  const head = src.slice(0, comma);
  let text: string;
  try {
    text = head.endsWith(';base64') ? atob(src.slice(comma + 1)) : decodeURIComponent(src.slice(comma + 1));
  } catch {
    return null;
  }
  const tag = /<svg\b[^>]*>/i.exec(text)?.[0];
  if (!tag) {
    return null;
  }
  const box = /\bviewBox\s*=\s*["']\s*[-\d.eE]+[\s,]+[-\d.eE]+[\s,]+([\d.eE]+)[\s,]+([\d.eE]+)\s*["']/.exec(tag);
  if (box) {
    const size = { width: Number(box[1]), height: Number(box[2]) };
    if (size.width > 0 && size.height > 0) {
      return size;
    }
  }
  const width = /\bwidth\s*=\s*["']([\d.]+)(px)?["']/.exec(tag);
  const height = /\bheight\s*=\s*["']([\d.]+)(px)?["']/.exec(tag);
  if (width && height) {
    return { width: Number(width[1]), height: Number(height[1]) };
  }
  return null;
}
