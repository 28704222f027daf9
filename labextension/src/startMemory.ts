/**
 * The start form's last values, remembered per notebook (browser ``localStorage``, keyed by
 * the notebook's path) so "New workflow…" opens pre-filled. Pure over a ``Storage``-like
 * object; anything unreadable in storage is ignored, never trusted.
 */
import type { PlannerKindInfo } from './types';

/** What is remembered: the planner kind, its fields, the problem, files and both checkboxes. */
export interface RememberedStart {
  kind: PlannerKindInfo['kind'];
  values: Record<string, string>;
  problem: string;
  files: string;
  autoConfirm: boolean;
  confirmIrreversible: boolean;
}

/** The part of ``Storage`` used here (``window.localStorage`` in Lab, a Map in tests). */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** ``window.localStorage`` when the browser allows it, else null (nothing remembered). */
export function browserStorage(): KeyValueStore | null {
  try {
    return typeof window !== 'undefined' ? window.localStorage : null;
  } catch {
    return null;
  }
}

const PREFIX = 'notebook-bcc:start:';
const KINDS: ReadonlyArray<PlannerKindInfo['kind']> = ['blueprint', 'replay', 'http', 'llm'];
/** The fields that held API paths (from the server root) before every path of the form was
 *  named from the notebook's folder; a record without ``paths: 'notebook'`` is that old. */
const ROOT_PATH_FIELDS: readonly string[] = ['blueprint', 'transcript', 'templates'];
/** Bound on what is read back (a value that grew elsewhere is dropped, not rendered). */
const MAX_CHARS = 100_000;

export function memoryKey(notebookPath: string): string {
  return PREFIX + notebookPath;
}

/** The remembered values for ``notebookPath``, or null when none (or unreadable). */
export function recallStart(store: KeyValueStore | null, notebookPath: string): RememberedStart | null {
  let raw: string | null = null;
  try {
    raw = store?.getItem(memoryKey(notebookPath)) ?? null;
  } catch {
    return null;
  }
  if (!raw || raw.length > MAX_CHARS) {
    return null;
  }
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!data || typeof data !== 'object') {
    return null;
  }
  const d = data as Record<string, unknown>;
  if (!KINDS.includes(d.kind as PlannerKindInfo['kind'])) {
    return null;
  }
  const values: Record<string, string> = {};
  if (d.values && typeof d.values === 'object') {
    for (const [key, value] of Object.entries(d.values as Record<string, unknown>)) {
      if (typeof value === 'string') {
        // remembered before the form named these from the notebook's folder: they are API
        // paths, i.e. from the server root, which the form writes with a leading /
        const fromRoot = d.paths !== 'notebook' && ROOT_PATH_FIELDS.includes(key) && value.trim();
        values[key] = fromRoot && !value.trim().startsWith('/') ? `/${value.trim()}` : value;
      }
    }
  }
  return {
    kind: d.kind as PlannerKindInfo['kind'],
    values,
    problem: typeof d.problem === 'string' ? d.problem : '',
    files: typeof d.files === 'string' ? d.files : '',
    autoConfirm: d.autoConfirm === true,
    confirmIrreversible: d.confirmIrreversible !== false
  };
}

/** Remember ``fields`` for ``notebookPath`` (storage full or blocked: silently not kept). */
export function rememberStart(
  store: KeyValueStore | null,
  notebookPath: string,
  fields: RememberedStart
): void {
  try {
    store?.setItem(memoryKey(notebookPath), JSON.stringify({ ...fields, paths: 'notebook' }));
  } catch {
    // private mode or quota: the form still works, it just does not remember
  }
}

/**
 * A notebook renamed from ``from`` to ``to``: its remembered values go with it. Left behind,
 * they were lost to the renamed notebook and offered to the next new notebook that took the
 * old name (a fresh ``Untitled.ipynb`` opened pre-filled with another analysis).
 */
export function moveStart(store: KeyValueStore | null, from: string, to: string): void {
  if (from === to) {
    return;
  }
  try {
    const raw = store?.getItem(memoryKey(from)) ?? null;
    if (raw === null) {
      return;
    }
    store?.setItem(memoryKey(to), raw);
    store?.removeItem(memoryKey(from));
  } catch {
    // private mode or quota: nothing to move
  }
}
