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
  CreateWorkflowBody,
  DiagramDocument,
  ErrorBody,
  EventList,
  FsmDocument,
  HoldAnswer,
  MergeAnswer,
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

// The wire shapes of the start form and co-editing live with the others in types.ts.
export type { CellOp, CreateWorkflowBody, HoldAnswer, MergeAnswer } from './types';

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

  /** Stored events with ``seq > after``, the newest ``limit`` of them, oldest first. */
  events(workflowId: string, after = 0, limit = 200): Promise<EventList> {
    const url = this.url('workflows', encodeURIComponent(workflowId), 'events');
    return this.request(`${url}?after=${after}&limit=${limit}`);
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

  /** Heartbeat: this browser (``holder``) has ``paths`` open (``dirty`` of them with unsaved
   *  edits); their workflows' versions. */
  holdDocuments(holder: string, paths: string[], dirty: string[] = []): Promise<HoldAnswer> {
    return this.request(this.url('documents'), {
      method: 'POST',
      body: JSON.stringify({ holder, paths, dirty })
    });
  }

  /** Release every notebook ``holder`` holds, in a request that outlives the page (sent as
   *  the page goes away: a reload or a closed window). */
  releaseDocuments(holder: string): Promise<HoldAnswer> {
    return this.request(this.url('documents'), {
      method: 'POST',
      body: JSON.stringify({ holder, paths: [], dirty: [] }),
      keepalive: true
    });
  }

  /** The operations that put a workflow's cells into this document (``reloaded``: Lab
   *  replaced the document with its file since the last merge). */
  mergeDocument(
    holder: string,
    path: string,
    cells: Array<[string | null, string]>,
    documentModified: string | null,
    reloaded = false
  ): Promise<MergeAnswer> {
    return this.request(this.url('documents', 'merge'), {
      method: 'POST',
      body: JSON.stringify({ holder, path, cells, document_modified: documentModified, reloaded })
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
