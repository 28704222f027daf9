/**
 * Paths in the start form, seen from the notebook: its folder, the blueprint expected beside
 * it, and every path (the blueprint, a recording, input files) named relative to that folder
 * (what ``files_relative_to`` / ``planner_paths_relative_to: notebook`` tell the server).
 * Pure, so it is unit-tested under plain node.
 */

/** The API folder of ``path`` (``''`` for the root), without a trailing slash. */
export function folderOf(path: string): string {
  const at = path.lastIndexOf('/');
  return at < 0 ? '' : path.slice(0, at);
}

/** ``workflow.yaml`` beside the notebook, as an API path. */
export function besideBlueprint(notebookPath: string): string {
  const folder = folderOf(notebookPath);
  return folder ? `${folder}/workflow.yaml` : 'workflow.yaml';
}

/** True for a file name the blueprint field accepts (``.yaml`` / ``.yml``). */
export function isYaml(name: string): boolean {
  return /\.ya?ml$/i.test(name);
}

function parts(path: string): string[] {
  return path.split('/').filter(part => part !== '' && part !== '.');
}

/**
 * API path ``target`` as seen from API folder ``folder``: ``a/b`` from ``a`` is ``b``, ``c/d``
 * from ``a/b`` is ``../../c/d``.
 */
export function relativeFrom(folder: string, target: string): string {
  const from = parts(folder);
  const to = parts(target);
  let common = 0;
  while (common < from.length && common < to.length && from[common] === to[common]) {
    common++;
  }
  const up: string[] = new Array<string>(from.length - common).fill('..');
  const result = [...up, ...to.slice(common)].join('/');
  return result || '.';
}

/**
 * One path of the start form as the server takes it, relative to the notebook's folder (what
 * ``files_relative_to`` / ``planner_paths_relative_to: notebook`` say): an entry starting
 * with ``/`` names a file from the server root and is rewritten relative to that folder;
 * ``./`` is dropped. Empty (or only ``/``): ``''``.
 */
export function notebookRelative(notebookPath: string, entry: string): string {
  const text = entry.trim();
  if (text.startsWith('/')) {
    const fromRoot = text.replace(/^\/+/, '');
    return fromRoot ? relativeFrom(folderOf(notebookPath), fromRoot) : '';
  }
  return text.replace(/^(\.\/)+/, '');
}

/**
 * The input files field as paths relative to the notebook's folder: commas or newlines,
 * trimmed, duplicates dropped, each entry as :func:`notebookRelative` makes it.
 */
export function inputPaths(notebookPath: string, text: string): string[] {
  const seen = new Set<string>();
  for (const raw of text.split(/[,\n]/)) {
    const path = notebookRelative(notebookPath, raw);
    if (path) {
      seen.add(path);
    }
  }
  return [...seen];
}

/** The start form's hint under each path field: where paths are read from. */
export function pathHint(notebookPath: string): string {
  const folder = folderOf(notebookPath);
  return (
    `Relative to the notebook's folder (${folder ? `${folder}/` : 'the server root'}); ` +
    'start with / to name a path from the server root.'
  );
}
