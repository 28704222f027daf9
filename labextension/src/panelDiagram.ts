/**
 * The panel's state diagram section: the workflow FSM or (for a blueprint) the stage machine,
 * drawn by JupyterLab's mermaid renderer when there is one, else shown as mermaid text.
 */
import type { IMermaidManager } from '@jupyterlab/mermaid';

import type { BccApi } from './api';
import { h, replaceChildren, section } from './dom';
import type { WorkflowSnapshot } from './types';
import { humanState } from './view';

/** What the diagram needs from JupyterLab. */
export interface DiagramServices {
  api: BccApi;
  mermaid: IMermaidManager | null;
  /** Show ``figure`` at full size in the main area. */
  openFigure(title: string, figure: HTMLElement): void;
}

/** The diagram section; keeps which machine is shown and which drawing is loaded. */
export class DiagramSection {
  /** Where the drawing goes (kept across renders so a loaded drawing is not redrawn). */
  readonly node: HTMLElement = h('div', { class: 'jp-NotebookBcc-diagramBody' });
  private machine: 'fsm' | 'stages' = 'fsm';
  private key = '';

  constructor(
    private readonly services: DiagramServices,
    private readonly rerender: () => void
  ) {}

  /** The collapsible diagram section for ``snapshot`` (loads the drawing while open). */
  render(openState: Map<string, boolean>, snapshot: WorkflowSnapshot): HTMLElement {
    const blueprint = snapshot.planner.kind === 'blueprint';
    if (!blueprint && this.machine === 'stages') {
      this.machine = 'fsm';
    }
    const tab = (machine: 'fsm' | 'stages', label: string): HTMLElement =>
      h(
        'button',
        {
          class: `jp-NotebookBcc-tab${this.machine === machine ? ' jp-mod-active' : ''}`,
          'data-testid': `bcc-diagram-${machine}`,
          role: 'tab',
          'aria-selected': String(this.machine === machine),
          onclick: () => {
            this.machine = machine;
            this.key = '';
            this.rerender();
          }
        },
        label
      );
    const details = section(
      'diagram',
      'State diagram',
      openState,
      false,
      'bcc-diagram',
      h(
        'div',
        { class: 'jp-NotebookBcc-tabs', role: 'tablist' },
        tab('fsm', 'Workflow FSM'),
        blueprint ? tab('stages', 'Stage machine') : null
      ),
      this.node
    );
    const key = `${snapshot.workflow_id}:${this.machine}:${snapshot.fsm.state}:${snapshot.stage_machine?.current_state ?? ''}`;
    const load = (): void => {
      if (details.open && key !== this.key) {
        this.key = key;
        void this.load(snapshot.workflow_id, this.machine, key);
      }
    };
    details.addEventListener('toggle', load);
    load();
    return details;
  }

  private async load(workflowId: string, machine: 'fsm' | 'stages', key: string): Promise<void> {
    try {
      const doc = await this.services.api.diagram(workflowId, machine);
      if (key !== this.key) {
        return;
      }
      const caption = h(
        'div',
        { class: 'jp-NotebookBcc-hint' },
        doc.current ? `Current: ${humanState(doc.current)}` : 'No current state.'
      );
      const mermaid = this.services.mermaid;
      if (mermaid) {
        try {
          const figure = await mermaid.renderFigure(doc.mermaid);
          if (key === this.key) {
            const title = machine === 'fsm' ? 'Workflow FSM' : 'Stage machine';
            const enlarge = h(
              'button',
              {
                class: 'jp-NotebookBcc-button jp-NotebookBcc-linkButton',
                'data-testid': 'bcc-diagram-open',
                title: 'Open the diagram at full size in a tab',
                onclick: () => this.services.openFigure(title, figure.cloneNode(true) as HTMLElement)
              },
              'Open in a tab'
            );
            replaceChildren(
              this.node,
              h('div', { class: 'jp-NotebookBcc-diagramBar' }, caption, enlarge),
              h('div', { class: 'jp-NotebookBcc-figure' }, figure)
            );
          }
          return;
        } catch {
          // fall through to the text form
        }
      }
      replaceChildren(
        this.node,
        caption,
        h('pre', { class: 'jp-NotebookBcc-code jp-NotebookBcc-mermaidText' }, doc.mermaid)
      );
    } catch (error) {
      replaceChildren(
        this.node,
        h('div', { class: 'jp-NotebookBcc-hint' }, `No diagram: ${(error as Error).message}`)
      );
    }
  }
}
