/**
 * The REST client of the server extension (``{base_url}notebook-bcc/api/``).
 *
 * Requests go through JupyterLab's ServerConnection, so the token, the XSRF cookie and the
 * base URL are the ones Lab itself uses. Every non-2xx answer becomes an ApiError carrying
 * the server's ``{code, message, details}``.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type {
  Command,
  DiagramDocument,
  ErrorBody,
  FsmDocument,
  PlannerKindInfo,
  WorkflowSnapshot,
  WorkflowSummary
} from './types';

/** A refused request: HTTP status plus the server's error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody
  ) {
    super(body.message);
    this.name = 'ApiError';
  }

  /** The fresh snapshot a 409 conflict carries, if any. */
  get snapshot(): WorkflowSnapshot | null {
    const value = this.body.details?.['snapshot'];
    return value && typeof value === 'object' ? (value as WorkflowSnapshot) : null;
  }
}

/** What the start form sends (``POST /workflows``). */
export interface CreateWorkflowBody {
  notebook_path: string;
  planner: Record<string, unknown>;
  problem?: string;
  files?: string[];
  /** ``notebook``: ``files`` are relative to the notebook's folder (default ``root``). */
  files_relative_to?: 'root' | 'notebook';
  options?: Record<string, unknown>;
}

/** The answer to a heartbeat (``POST /documents``). */
export interface HoldAnswer {
  ttl: number;
  collaborative: boolean;
  documents: Array<{ path: string; workflow_id: string; version: number }>;
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

export class BccApi {
  readonly settings: ServerConnection.ISettings;

  constructor(settings?: ServerConnection.ISettings) {
    this.settings = settings ?? ServerConnection.makeSettings();
  }

  /** ``{base_url}notebook-bcc/api/<parts>``. */
  url(...parts: string[]): string {
    return URLExt.join(this.settings.baseUrl, 'notebook-bcc', 'api', ...parts);
  }

  /** The websocket URL of a workflow's event stream (the token rides as a query). */
  streamUrl(workflowId: string): string {
    const path = URLExt.join(
      this.settings.wsUrl,
      'notebook-bcc',
      'api',
      'workflows',
      encodeURIComponent(workflowId),
      'stream'
    );
    const token = this.settings.token;
    return token ? `${path}?token=${encodeURIComponent(token)}` : path;
  }

  private async request<T>(url: string, init: RequestInit = {}): Promise<T> {
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, init, this.settings);
    } catch (error) {
      throw new ApiError(0, {
        code: 'network_error',
        message: `The server could not be reached: ${String((error as Error).message ?? error)}`
      });
    }
    const text = await response.text();
    let data: unknown = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!response.ok) {
      const body =
        data && typeof data === 'object' && 'message' in data
          ? (data as ErrorBody)
          : { code: 'http_error', message: `${response.status} ${response.statusText}` };
      throw new ApiError(response.status, body);
    }
    return data as T;
  }

  fsm(): Promise<FsmDocument> {
    return this.request(this.url('fsm'));
  }

  /** Workflow summaries, oldest first; only ``notebookPath``'s when given. */
  async workflows(notebookPath?: string): Promise<WorkflowSummary[]> {
    const query = notebookPath ? `?notebook_path=${encodeURIComponent(notebookPath)}` : '';
    const doc = await this.request<{ workflows: WorkflowSummary[] }>(
      this.url('workflows') + query
    );
    return doc.workflows;
  }

  workflow(workflowId: string): Promise<WorkflowSnapshot> {
    return this.request(this.url('workflows', encodeURIComponent(workflowId)));
  }

  /** Stop a workflow and release its notebook (``DELETE /workflows/{id}``). */
  deleteWorkflow(workflowId: string): Promise<WorkflowSnapshot> {
    return this.request(this.url('workflows', encodeURIComponent(workflowId)), {
      method: 'DELETE'
    });
  }

  create(body: CreateWorkflowBody): Promise<WorkflowSnapshot> {
    return this.request(this.url('workflows'), {
      method: 'POST',
      body: JSON.stringify(body)
    });
  }

  command(workflowId: string, command: Command): Promise<WorkflowSnapshot> {
    return this.request(this.url('workflows', encodeURIComponent(workflowId), 'commands'), {
      method: 'POST',
      body: JSON.stringify(command)
    });
  }

  diagram(workflowId: string, machine: 'fsm' | 'stages'): Promise<DiagramDocument> {
    const url = this.url('workflows', encodeURIComponent(workflowId), 'diagram');
    return this.request(`${url}?machine=${machine}`);
  }

  /** Heartbeat: this browser (``holder``) has ``paths`` open; their workflows' versions. */
  holdDocuments(holder: string, paths: string[]): Promise<HoldAnswer> {
    return this.request(this.url('documents'), {
      method: 'POST',
      body: JSON.stringify({ holder, paths })
    });
  }

  /** The operations that put a workflow's cells into this document. */
  mergeDocument(
    holder: string,
    path: string,
    cells: Array<[string | null, string]>,
    documentModified: string | null
  ): Promise<MergeAnswer> {
    return this.request(this.url('documents', 'merge'), {
      method: 'POST',
      body: JSON.stringify({ holder, path, cells, document_modified: documentModified })
    });
  }

  /** A merge plan was applied and saved. */
  async acknowledgeMerge(
    path: string,
    token: string,
    saved: string | null,
    detached: string[],
    deleted: string[]
  ): Promise<boolean> {
    const answer = await this.request<{ acknowledged: boolean }>(
      this.url('documents', 'ack'),
      { method: 'POST', body: JSON.stringify({ path, token, saved, detached, deleted }) }
    );
    return answer.acknowledged;
  }

  async planners(): Promise<PlannerKindInfo[]> {
    const doc = await this.request<{ planners: PlannerKindInfo[] }>(this.url('planners'));
    return doc.planners;
  }
}
