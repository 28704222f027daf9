/**
 * Paths in the start form, seen from the notebook: its folder, the blueprint expected beside
 * it, and input files named relative to that folder (what ``files_relative_to: notebook``
 * tells the server). Pure, so it is unit-tested under plain node.
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
 * The input files field as paths relative to the notebook's folder: commas or newlines,
 * trimmed, duplicates dropped. An entry starting with ``/`` names a file from the server root
 * and is rewritten relative to the notebook's folder.
 */
export function inputPaths(notebookPath: string, text: string): string[] {
  const folder = folderOf(notebookPath);
  const seen = new Set<string>();
  for (const raw of text.split(/[,\n]/)) {
    const entry = raw.trim();
    if (!entry) {
      continue;
    }
    if (entry.startsWith('/')) {
      const fromRoot = entry.replace(/^\/+/, '');
      if (fromRoot) {
        seen.add(relativeFrom(folder, fromRoot));
      }
    } else {
      seen.add(entry.replace(/^(\.\/)+/, ''));
    }
  }
  return [...seen];
}
