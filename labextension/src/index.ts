/**
 * notebook-bcc JupyterLab extension: the Workflow side panel and its commands.
 *
 * The panel follows the active notebook and shows its workflow live (REST + websocket of the
 * server extension); commands in the palette steer it. Mermaid comes from JupyterLab's own
 * optional IMermaidManager (text when absent), never bundled.
 */
import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Dialog, ICommandPalette, MainAreaWidget, showDialog } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { FileDialog } from '@jupyterlab/filebrowser';
import { IMermaidManager } from '@jupyterlab/mermaid';
import { INotebookTracker } from '@jupyterlab/notebook';
import { NotebookNavigator } from './navigateUi';
import { Widget } from '@lumino/widgets';

import { BccApi } from './api';
import { fullSizeFigure } from './dom';
import { WorkflowPanel } from './panel';
import { DocumentCoeditor } from './coedit';
import { KernelWatch } from './kernelWatch';
import { NotebookSync } from './sync';
import { browserStorage, moveStart } from './startMemory';
import type { ControlId } from './view';

export { WORKFLOW_PANEL_ID, WorkflowPanel } from './panel';

/** Command ids (also in the palette under "Workflow"). */
export namespace CommandIDs {
  export const open = 'notebook-bcc:open';
  export const start = 'notebook-bcc:start';
  export const approve = 'notebook-bcc:approve';
  export const reject = 'notebook-bcc:reject';
  export const run = 'notebook-bcc:run';
  export const pause = 'notebook-bcc:pause';
  export const cancel = 'notebook-bcc:cancel';
  export const reset = 'notebook-bcc:reset';
  export const restart = 'notebook-bcc:restart';
  export const retry = 'notebook-bcc:retry';
}

/** How long a start waits for a new notebook's session (Lab starting its kernel). */
const SESSION_WAIT_MS = 20_000;

/** The open diagram tabs, by title (one per diagram). */
const diagramViews = new Map<string, MainAreaWidget<Widget>>();

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'notebook-bcc:workflow-panel',
  description: 'The notebook-bcc Workflow side panel.',
  autoStart: true,
  requires: [INotebookTracker, IDocumentManager],
  optional: [ICommandPalette, IMermaidManager, ILabShell, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    docManager: IDocumentManager,
    palette: ICommandPalette | null,
    mermaid: IMermaidManager | null,
    labShell: ILabShell | null,
    restorer: ILayoutRestorer | null
  ): void => {
    const api = new BccApi(app.serviceManager.serverSettings);
    const navigator = new NotebookNavigator(tracker, id => app.shell.activateById(id)); // panelnav
    const panel = new WorkflowPanel({
      api,
      mermaid,
      afterRender: (body, snapshot, path) => navigator.decorate(body, snapshot, path), // panelnav
      confirm: async (title, body, accept) => {
        const result = await showDialog({
          title,
          body,
          buttons: [
            Dialog.cancelButton({ label: 'Keep going' }),
            Dialog.warnButton({ label: accept })
          ]
        });
        return result.button.accept;
      },
      browse: async (title, options) => {
        const extensions = options?.extensions;
        const result = await FileDialog.getOpenFiles({
          manager: docManager,
          title,
          defaultPath: options?.folder,
          // folders stay listed (to walk into them); files only with a wanted ending
          filter: extensions
            ? model =>
                model.type === 'directory' ||
                extensions.some(end => model.name.toLowerCase().endsWith(end))
                  ? {}
                  : null
            : undefined
        });
        const chosen = result.value?.[0];
        return result.button.accept && chosen ? chosen.path : null;
      },
      fileExists: async path => {
        // asked of the folder's listing: a GET of a missing file is a 404 in the server log
        // each time a start form opens
        const slash = path.lastIndexOf('/');
        const folder = slash >= 0 ? path.slice(0, slash) : '';
        const name = path.slice(slash + 1);
        try {
          const listing = await docManager.services.contents.get(folder, {
            type: 'directory',
            content: true
          });
          const entries = (listing.content ?? []) as Array<{ name: string; type: string }>;
          return entries.some(entry => entry.name === name && entry.type !== 'directory');
        } catch {
          return false;
        }
      },
      openNotebook: path => {
        void app.commands.execute('docmanager:open', { path });
      },
      beforeStart: async path => {
        const widget = docManager.findWidget(path);
        if (widget && widget.context.model.dirty) {
          await widget.context.save();
        }
        // A notebook Lab just made is still starting its session: the server would find no
        // session for the path and start a second kernel beside the one Lab is starting.
        const notebook = widget ? tracker.find(panel => panel === widget) : undefined;
        const session = notebook?.sessionContext;
        if (session && !session.isReady) {
          await Promise.race([
            session.ready,
            new Promise(resolve => setTimeout(resolve, SESSION_WAIT_MS))
          ]);
        }
        // Still no kernel: the user shut it down (or picked "No Kernel"). Start the notebook's
        // own through Lab, so the workflow runs on the kernel the notebook shows, not on a second
        // one the server would start beside it that the notebook never sees.
        if (notebook && session && !session.isDisposed && !session.session?.kernel) {
          const spec = notebook.model?.getMetadata('kernelspec') as { name?: string } | undefined;
          const specs = app.serviceManager.kernelspecs.specs;
          // the notebook's kernel when this server has it, else the server's default
          const name = spec?.name && specs?.kernelspecs[spec.name] ? spec.name : specs?.default;
          if (name) {
            await session.changeKernel({ name });
          }
        }
      },
      notebookModel: path => {
        const widget = tracker.find(panel => panel.context.path === path);
        if (!widget?.context.isReady) {
          return null;
        }
        const shared = widget.context.model.sharedModel;
        return {
          get cells() {
            return shared.cells;
          },
          transact: f => shared.transact(f),
          deleteCell: index => shared.deleteCell(index),
          insertCells: (index, cells) => shared.insertCells(index, cells as never),
          getMetadata: key => shared.getMetadata(key),
          setMetadata: (key, value) => shared.setMetadata(key, value)
        };
      },
      defaultCell: path =>
        tracker.find(panel => panel.context.path === path)?.content.notebookConfig.defaultCell ??
        'code',
      saveNotebook: async path => {
        await tracker.find(panel => panel.context.path === path)?.context.save();
      },
      openFigure: (title, figure) => {
        // one tab per diagram: opening it again shows the current drawing in the same tab
        const existing = diagramViews.get(title);
        if (existing && !existing.isDisposed) {
          const node = existing.content.node;
          node.replaceChildren(fullSizeFigure(figure));
          app.shell.activateById(existing.id);
          return;
        }
        const content = new Widget();
        content.node.append(fullSizeFigure(figure));
        content.addClass('jp-NotebookBcc-diagramView');
        const view = new MainAreaWidget({ content });
        view.id = `notebook-bcc-diagram-${diagramViews.size + 1}-${Date.now()}`;
        view.title.label = title;
        view.title.closable = true;
        diagramViews.set(title, view);
        view.disposed.connect(() => diagramViews.delete(title));
        app.shell.add(view, 'main');
        app.shell.activateById(view.id);
      }
    });
    app.shell.add(panel, 'right', { rank: 1000 });
    // the workspace remembers the panel: left open, it is open again after a reload
    restorer?.add(panel, panel.id);
    const coeditor = new DocumentCoeditor(api, tracker, docManager);
    const sync = new NotebookSync(panel, docManager, path => coeditor.holds(path));
    panel.eventsReceived.connect((_, events) => {
      if (events.some(e => e.kind === 'cell')) {
        coeditor.poke();
      }
    });
    coeditor.writing.connect((_, doc) => panel.workflowWriting(doc.path, doc.workflowId));
    const kernelWatch = new KernelWatch({
      notebook: path => tracker.find(widget => widget.context.path === path),
      sessionOf: path => app.serviceManager.sessions.findByPath(path),
      open: async path => {
        await app.commands.execute('docmanager:open', { path });
      },
      offer: connect => (connect ? panel.showKernelNotice(connect) : panel.hideKernelNotice())
    });
    panel.snapshotChanged.connect((_, snapshot) => void kernelWatch.check(panel.path, snapshot));
    tracker.widgetAdded.connect((_, widget) => {
      // an open start form counts the earlier run's cells again
      widget.context.model.cells.changed.connect(() =>
        panel.notebookCellsChanged(widget.context.path)
      );
      // the user starts or picks a kernel (or Lab connects one): look again
      const again = (): void => {
        if (widget.context.path === panel.path) {
          void kernelWatch.check(panel.path, panel.snapshot);
        }
      };
      widget.sessionContext.sessionChanged.connect(again);
      widget.sessionContext.kernelChanged.connect(again);
    });
    panel.disposed.connect(() => {
      sync.dispose();
      coeditor.dispose();
    });

    const follow = (): void => {
      const current = tracker.currentWidget;
      void panel.setNotebook(current ? current.context.path : null);
    };
    tracker.currentChanged.connect(follow);
    tracker.widgetAdded.connect((_, widget) => {
      let known = widget.context.path;
      widget.context.pathChanged.connect((_, path) => {
        const old = known;
        known = path;
        moveStart(browserStorage(), old, path); // the start form's values follow the rename
        if (panel.path === old) {
          panel.notebookRenamed(old, path); // the workflow moves with its notebook
        } else {
          follow();
        }
      });
    });
    void app.restored.then(follow);
    if (labShell) {
      // a notebook renamed or closed while the panel shows it
      labShell.currentChanged.connect(() => {
        if (!tracker.currentWidget && tracker.size === 0) {
          void panel.setNotebook(null);
        }
      });
    }

    const hasSnapshot = (): boolean => panel.snapshot !== null;
    const pendingLabel = (verb: string): string => {
      const first = panel.snapshot?.run.pending[0];
      return first ? `${verb} Workflow Decision: ${first.message}` : `${verb} Workflow Decision`;
    };
    const showPanel = (): void => {
      app.shell.activateById(panel.id);
    };

    app.commands.addCommand(CommandIDs.open, {
      label: 'Show Workflow Panel',
      execute: showPanel
    });
    app.commands.addCommand(CommandIDs.start, {
      label: 'Start a Workflow on This Notebook…',
      isEnabled: () => panel.path !== null,
      execute: () => {
        showPanel();
        panel.openStartForm();
      }
    });
    app.commands.addCommand(CommandIDs.approve, {
      label: () => pendingLabel('Approve'),
      isEnabled: () => (panel.snapshot?.run.pending.length ?? 0) > 0,
      execute: () => panel.decide('approve')
    });
    app.commands.addCommand(CommandIDs.reject, {
      label: () => pendingLabel('Reject'),
      isEnabled: () => (panel.snapshot?.run.pending.length ?? 0) > 0,
      execute: () => panel.decide('reject')
    });
    const control = (id: ControlId, label: string): void => {
      app.commands.addCommand(`notebook-bcc:${id}`, {
        label,
        isEnabled: hasSnapshot,
        execute: () => {
          showPanel();
          return panel.control(id);
        }
      });
    };
    control('run', 'Run (Resume) Workflow');
    control('pause', 'Pause Workflow');
    control('cancel', 'Cancel Workflow…');
    control('reset', 'Reset Workflow…');
    control('restart', 'Start the Workflow Over');
    control('retry', 'Retry the Workflow From Its Failure');
    panel.snapshotChanged.connect(() => app.commands.notifyCommandChanged());

    if (palette) {
      for (const command of [
        CommandIDs.open,
        CommandIDs.start,
        CommandIDs.approve,
        CommandIDs.reject,
        CommandIDs.run,
        CommandIDs.pause,
        CommandIDs.cancel,
        CommandIDs.reset,
        CommandIDs.restart,
        CommandIDs.retry
      ]) {
        palette.addItem({ command, category: 'Workflow' });
      }
    }
  }
};

export default plugin;
