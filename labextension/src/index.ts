/**
 * notebook-bcc JupyterLab extension: the "Workflow" side panel.
 *
 * For now the panel only says that there is no workflow; later it shows the
 * running workflow's state machine, its stages and the pending decisions.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Widget } from '@lumino/widgets';

/** DOM id of the panel; tests and the shell find the panel by it. */
export const WORKFLOW_PANEL_ID = 'notebook-bcc-workflow-panel';

/**
 * The Workflow side panel (empty placeholder).
 *
 * A plain Lumino widget so that it stays cheap to create at start-up.
 */
export class WorkflowPanel extends Widget {
  constructor() {
    super();
    this.id = WORKFLOW_PANEL_ID;
    this.addClass('jp-NotebookBcc-WorkflowPanel');
    this.title.label = 'Workflow';
    this.title.caption = 'notebook-bcc workflow';

    const empty = document.createElement('p');
    empty.className = 'jp-NotebookBcc-empty';
    empty.textContent = 'No workflow yet';
    this.node.appendChild(empty);
  }
}

/** Registers the Workflow panel in the right side area when JupyterLab starts. */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'notebook-bcc:workflow-panel',
  description: 'The notebook-bcc Workflow side panel.',
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    const panel = new WorkflowPanel();
    app.shell.add(panel, 'right', { rank: 1000 });
  }
};

export default plugin;
