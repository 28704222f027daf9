/**
 * The wire shapes the panel reads: the server's WorkflowSnapshot (D5), WorkflowEvent (D4),
 * pending decisions (D2) and the REST documents around them.
 *
 * Mirrors notebook_bcc.models / notebook_bcc.server.models (the server's openapi.json is the
 * authority). Only the fields the panel uses are typed; the rest pass through untouched.
 * Pure types: no JupyterLab imports, so the view logic stays testable under plain node.
 */

export type RunStatus =
  | 'running'
  | 'paused'
  | 'waiting'
  | 'interrupted'
  | 'failed'
  | 'completed'
  | 'cancelled';

export type PendingKind =
  | 'workflow_update'
  | 'step_update'
  | 'stage_confirmation'
  | 'irreversible_confirmation'
  | 'in_doubt'
  | 'kernel_rebuild'
  | 'budget'
  | 'lost_state';

export interface PendingDecision {
  id: string;
  kind: PendingKind;
  message: string;
  details: Record<string, unknown>;
  created_at: string;
}

export interface PcsConsiderations {
  predictability?: string | null;
  computability?: string | null;
  stability?: string | null;
}

export type CompletionStatus = 'success' | 'failed' | 'unverified' | 'skipped';

export interface PlanItem {
  id: string;
  title?: string | null;
  goal?: string | null;
  verified_artifacts?: Record<string, string>;
  required_variables?: Record<string, string>;
  acceptance?: string[];
  focus?: string | null;
  optional?: boolean;
  pcs_considerations?: PcsConsiderations | null;
  agent?: string | null;
  task?: string | null;
  inputs?: Record<string, string>;
  outputs?: Record<string, string>;
  iteration?: number | null;
  visits?: number;
  completion_status?: CompletionStatus | null;
  artifacts_produced?: string[];
  whathappened?: string | null;
  extra?: Record<string, unknown>;
}

export interface Outputs {
  expected: string[];
  produced: string[];
  in_progress: string[];
}

export interface LevelProgress {
  completed: PlanItem[];
  current: PlanItem | null;
  remaining: PlanItem[];
  focus?: string | null;
  current_outputs?: Outputs;
  iteration?: number | null;
}

export interface VariableInfo {
  type: string;
  value?: unknown;
  shape?: number[] | null;
  dtypes?: Record<string, string> | null;
  length?: number | null;
  repr?: string | null;
  source?: 'kernel' | 'planner' | 'user';
}

export interface AcceptanceResult {
  status: 'passed' | 'failed' | 'error';
  message?: string | null;
}

export interface Gap {
  variable: string;
  level: 'stage' | 'step' | 'behavior';
  owner_id: string;
  detected_at: string;
}

export interface HistoryEntry {
  from: string;
  event: string;
  to: string;
  timestamp: string;
  actor: string;
}

export interface UsageTotals {
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  latency_ms: number;
}

export interface Metrics {
  stage_progress?: number | null;
  overall_progress?: number | null;
  artifact_completion?: number | null;
  acceptance_pass_rate?: number | null;
  retry_rate?: number | null;
  variable_coverage?: number | null;
  pcs?: {
    seeds_set?: boolean | null;
    library_versions_recorded?: boolean | null;
    holdout_split?: boolean | null;
  };
}

/** What the panel reads of an open ExecutionContract. */
export interface OpenContract {
  execution_id: string;
  status: 'PENDING' | 'RUNNING' | 'WAITING' | 'COMPLETED' | 'FAILED' | 'REJECTED' | 'CANCELLED';
}

export interface WorkflowSnapshot {
  workflow_id: string;
  run_id: string;
  notebook_path?: string | null;
  version: number;
  fsm: {
    state: string;
    last_transition?: string | null;
    /** When it last moved (ISO 8601). */
    timestamp?: string | null;
    history: HistoryEntry[];
  };
  run: {
    status: RunStatus;
    reason?: string | null;
    since?: string | null;
    pending: PendingDecision[];
  };
  location: {
    current: {
      stage_id?: string | null;
      step_id?: string | null;
      behavior_id?: string | null;
      behavior_iteration?: number;
    };
    progress: { stages: LevelProgress; steps: LevelProgress; behaviors: LevelProgress };
    goals?: string | null;
  };
  variables: Record<string, VariableInfo>;
  effects: { current: string[]; history: string[] };
  notebook?: { cell_count?: number; execution_count?: number };
  acceptance: Record<string, Record<string, AcceptanceResult>>;
  gaps: Gap[];
  stage_machine?: {
    current_state?: string | null;
    visits?: Record<string, number>;
    hops?: number;
    max_hops?: number | null;
  };
  metrics: Metrics;
  usage: UsageTotals & { per_stage: Record<string, UsageTotals> };
  planner: { kind: string; settings?: Record<string, unknown> };
  /** Contracts not yet settled: a ``RUNNING`` one is a cell the kernel runs now. */
  open_contracts?: OpenContract[];
  problem?: string | null;
  files?: string[];
}

export type EventKind = 'transition' | 'contract' | 'run' | 'cell' | 'decision';

export interface WorkflowEvent {
  workflow_id: string;
  seq: number;
  version: number;
  at: string;
  kind: EventKind;
  from?: string | null;
  event?: string | null;
  to?: string | null;
  actor: string;
  run_status: RunStatus;
  detail: Record<string, unknown>;
}

/** ``GET /workflows/{id}/events``: stored events, oldest first (what the stream did not carry). */
export interface EventList {
  workflow_id: string;
  after: number;
  events: WorkflowEvent[];
  truncated: boolean;
}

/** A websocket message that carries the whole snapshot (hello, resync, closed). */
export interface StreamSnapshot {
  type: 'snapshot';
  reason: 'hello' | 'resync' | 'closed';
  snapshot: WorkflowSnapshot;
}

export interface WorkflowSummary {
  workflow_id: string;
  notebook_path: string | null;
  version: number;
  state: string;
  run_status: RunStatus;
  reason?: string | null;
  pending: number;
  active: boolean;
  /** Why it no longer holds its notebook (null while it does): its run finished, it was
   *  deleted, or a newer workflow on its notebook replaced it. */
  released?: 'finished' | 'deleted' | 'replaced' | null;
  live: boolean;
  running: boolean;
  /** Being brought back after a server restart: live once its kernel is rebuilt. */
  recovering?: boolean;
  last_activity?: string | null;
  /** Set when the server refused to recover it at start-up, and why. */
  not_recovered?: { reason: 'altered' | 'not_recovered'; message: string } | null;
}

export interface FsmTransition {
  from: string;
  event: string;
  to: string;
}

export interface FsmDocument {
  states: string[];
  events: string[];
  transitions: FsmTransition[];
}

export interface DiagramDocument {
  workflow_id: string;
  machine: 'fsm' | 'stages';
  current: string | null;
  mermaid: string;
}

/** One planner kind the server can (or cannot) run, for the start form. */
export interface PlannerKindInfo {
  kind: 'blueprint' | 'replay' | 'http' | 'llm';
  available: boolean;
  reason?: string | null;
  defaults?: Record<string, unknown>;
}

/** D3 commands. */
export type Command =
  | { event: string; expected_version: number }
  | { decide: string; decision: 'approve' | 'reject'; expected_version: number }
  | { action: 'run' | 'pause' | 'retry' | 'restart'; expected_version: number };

/** Every error answer of the REST API. */
export interface ErrorBody {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** What the start form sends (``POST /workflows``). */
export interface CreateWorkflowBody {
  notebook_path: string;
  planner: Record<string, unknown>;
  problem?: string;
  files?: string[];
  /** ``notebook``: ``files`` are relative to the notebook's folder (default ``root``). */
  files_relative_to?: 'root' | 'notebook';
  /** ``notebook``: the planner's paths (a blueprint, a recording, a templates folder) too. */
  planner_paths_relative_to?: 'root' | 'notebook';
  options?: Record<string, unknown>;
  /** Restart the notebook's kernel first; omitted: only when an earlier workflow ran on it. */
  fresh_kernel?: boolean | null;
}

/** The answer to a heartbeat (``POST /documents``). */
export interface HoldAnswer {
  ttl: number;
  collaborative: boolean;
  /** ``writer``: this window takes the workflow's cells and saves them; the others (the same
   *  notebook open in another window) reload the file while they are clean. */
  documents: Array<{ path: string; workflow_id: string; version: number; writer?: boolean }>;
}

/** One cell operation of a merge plan (indices valid when applied in order). */
export interface CellOp {
  op: 'insert' | 'update' | 'replace';
  index: number;
  cell_id: string;
  cell: Record<string, unknown>;
}

/** A merge plan (``POST /documents/merge``). */
export interface MergeAnswer {
  version: number;
  token: string;
  ops: CellOp[];
  metadata: Record<string, unknown>;
  detached: string[];
  deleted: string[];
}
