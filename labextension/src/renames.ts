/**
 * A rename or move through this window (File > Rename, the file browser's drag and drop)
 * waits for the saves under way of the documents it moves, and the saves asked for meanwhile
 * wait for it.
 *
 * Lab's save looks at the file at the path it started with, then writes it there. A move in
 * between made it write a new file at the old name (the notebook the user moved came back),
 * or fail with "File Save Error" (the file it looked at was gone). The co-editor saves often
 * while a workflow runs, so a move mid-run met a save in flight.
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Contents } from '@jupyterlab/services';

/** One document's save queue, as the co-editor keeps it (one save at a time). */
export interface SaveQueue {
  /** Settles when the saves queued so far have ended. */
  tail(): Promise<unknown>;
  /** Saves queued from now on start only once ``until`` settles. */
  hold(until: Promise<unknown>): void;
}

type Renaming = Contents.IManager & {
  rename(path: string, newPath: string): Promise<Contents.IModel>;
};

/** Route every rename of ``contents`` through the save queues of the documents it moves. */
export function serializeRenames(
  contents: Contents.IManager,
  tracker: INotebookTracker,
  queues: WeakMap<NotebookPanel, SaveQueue>
): void {
  const manager = contents as Renaming;
  const rename = manager.rename.bind(manager);
  manager.rename = async (path: string, newPath: string): Promise<Contents.IModel> => {
    const moved: SaveQueue[] = [];
    tracker.forEach(panel => {
      const at = panel.context.path;
      const queue = queues.get(panel);
      if (queue && (at === path || at.startsWith(`${path}/`))) {
        moved.push(queue);
      }
    });
    const under = moved.map(queue => queue.tail().catch(() => undefined));
    let done = (): void => undefined;
    const renamed = new Promise<void>(resolve => {
      done = resolve;
    });
    for (const queue of moved) {
      queue.hold(renamed);
    }
    try {
      await Promise.all(under);
      return await rename(path, newPath);
    } finally {
      done();
    }
  };
}
