/**
 * The start form: a planner (a blueprint file, a recorded transcript, a DSLC server or an
 * LLM endpoint), the problem text and the input files, for the active notebook.
 *
 * Planner kinds the server cannot run are shown disabled with the server's reason. A refused
 * start (400) shows the server's message in the form and keeps what the user typed.
 */
import { ApiError, BccApi, type CreateWorkflowBody } from './api';
import { h, replaceChildren } from './dom';
import type { PlannerKindInfo } from './types';
import { buildStartBody, type StartFields } from './startBody';

export interface StartFormOptions {
  api: BccApi;
  notebookPath: string;
  browse(title: string): Promise<string | null>;
  onSubmit(body: CreateWorkflowBody): Promise<void>;
  onCancel(): void;
}

const KIND_LABELS: Record<PlannerKindInfo['kind'], string> = {
  blueprint: 'YAML blueprint',
  replay: 'Recorded transcript (replay)',
  http: 'DSLC planning server',
  llm: 'LLM (OpenAI-compatible)'
};

export class StartForm {
  readonly node: HTMLFormElement;
  private readonly kind: HTMLSelectElement;
  private readonly fieldsNode: HTMLElement;
  private readonly errorNode: HTMLElement;
  private readonly submit: HTMLButtonElement;
  private readonly inputs = new Map<string, HTMLInputElement | HTMLTextAreaElement>();
  private readonly problem: HTMLTextAreaElement;
  private readonly files: HTMLInputElement;
  private readonly autoConfirm: HTMLInputElement;
  private readonly confirmIrreversible: HTMLInputElement;
  private planners: PlannerKindInfo[] = [];

  constructor(private readonly options: StartFormOptions) {
    this.kind = h('select', {
      class: 'jp-mod-styled',
      id: 'bcc-start-kind',
      'data-testid': 'bcc-start-kind',
      onchange: () => this.renderFields()
    });
    for (const kind of Object.keys(KIND_LABELS) as Array<PlannerKindInfo['kind']>) {
      this.kind.appendChild(h('option', { value: kind }, KIND_LABELS[kind]));
    }
    this.fieldsNode = h('div', { class: 'jp-NotebookBcc-formFields' });
    this.problem = h('textarea', {
      id: 'bcc-start-problem',
      class: 'jp-mod-styled',
      'data-testid': 'bcc-start-problem',
      rows: 3,
      placeholder: 'e.g. Predict house prices; the held-out RMSE must be below 18,000.'
    });
    this.files = h('input', {
      id: 'bcc-start-files',
      class: 'jp-mod-styled',
      'data-testid': 'bcc-start-files',
      type: 'text',
      placeholder: 'data/housing.csv, data/extra.csv'
    });
    this.autoConfirm = h('input', { type: 'checkbox', 'data-testid': 'bcc-start-auto-confirm' });
    this.confirmIrreversible = h('input', {
      type: 'checkbox',
      checked: true,
      'data-testid': 'bcc-start-confirm-irreversible'
    });
    this.errorNode = h('div', { class: 'jp-NotebookBcc-formError', role: 'alert' });
    this.submit = h(
      'button',
      {
        type: 'submit',
        class: 'jp-NotebookBcc-button jp-mod-styled jp-mod-accept',
        'data-testid': 'bcc-start-submit'
      },
      'Start'
    );
    this.node = h(
      'form',
      { class: 'jp-NotebookBcc-startForm', 'data-testid': 'bcc-start-form' },
      h('div', { class: 'jp-NotebookBcc-sectionHeading' }, `Start a workflow on ${options.notebookPath}`),
      this.row('Planner', 'bcc-start-kind', this.kind),
      this.fieldsNode,
      this.row('Problem', 'bcc-start-problem', this.problem),
      this.row('Input files', 'bcc-start-files', this.withBrowse(this.files, 'Choose an input file', true)),
      h(
        'label',
        { class: 'jp-NotebookBcc-check' },
        this.autoConfirm,
        ' Approve confirmations and updates automatically'
      ),
      h(
        'label',
        { class: 'jp-NotebookBcc-check' },
        this.confirmIrreversible,
        ' Ask before irreversible actions'
      ),
      this.errorNode,
      h(
        'div',
        { class: 'jp-NotebookBcc-formButtons' },
        this.submit,
        h(
          'button',
          {
            type: 'button',
            class: 'jp-NotebookBcc-button jp-mod-styled',
            'data-testid': 'bcc-start-cancel',
            onclick: () => options.onCancel()
          },
          'Cancel'
        )
      )
    );
    this.node.addEventListener('submit', event => {
      event.preventDefault();
      void this.send();
    });
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Escape') {
        options.onCancel();
      }
    });
    this.renderFields();
    void options.api
      .planners()
      .then(planners => {
        this.planners = planners;
        this.applyAvailability();
      })
      .catch(() => undefined);
  }

  focus(): void {
    this.kind.focus();
  }

  private row(label: string, id: string, control: HTMLElement): HTMLElement {
    return h(
      'div',
      { class: 'jp-NotebookBcc-formRow' },
      h('label', { for: id }, label),
      control
    );
  }

  private withBrowse(
    input: HTMLInputElement,
    title: string,
    appendValue: boolean
  ): HTMLElement {
    return h(
      'div',
      { class: 'jp-NotebookBcc-browseRow' },
      input,
      h(
        'button',
        {
          type: 'button',
          class: 'jp-NotebookBcc-button jp-mod-styled',
          title,
          'aria-label': title,
          onclick: async () => {
            const chosen = await this.options.browse(title);
            if (chosen) {
              input.value =
                appendValue && input.value.trim() ? `${input.value.trim()}, ${chosen}` : chosen;
            }
          }
        },
        'Browse…'
      )
    );
  }

  private textInput(name: string, placeholder: string, value = ''): HTMLInputElement {
    const input = h('input', {
      id: `bcc-start-${name}`,
      class: 'jp-mod-styled',
      type: 'text',
      'data-testid': `bcc-start-${name}`,
      placeholder
    });
    input.value = value;
    this.inputs.set(name, input);
    return input;
  }

  private renderFields(): void {
    const kind = this.kind.value as PlannerKindInfo['kind'];
    const defaults = this.planners.find(p => p.kind === kind)?.defaults ?? {};
    const text = (key: string): string =>
      typeof defaults[key] === 'string' ? (defaults[key] as string) : '';
    this.inputs.clear();
    const folder = this.options.notebookPath.includes('/')
      ? this.options.notebookPath.slice(0, this.options.notebookPath.lastIndexOf('/') + 1)
      : '';
    const rows: HTMLElement[] = [];
    if (kind === 'blueprint') {
      const input = this.textInput('blueprint', `${folder}workflow.yaml`, text('path'));
      rows.push(this.row('Blueprint', 'bcc-start-blueprint', this.withBrowse(input, 'Choose a blueprint (.yaml)', false)));
    } else if (kind === 'replay') {
      const input = this.textInput('transcript', 'recordings/housing-run', text('path'));
      rows.push(this.row('Recording folder', 'bcc-start-transcript', input));
    } else if (kind === 'http') {
      rows.push(
        this.row('Server URL', 'bcc-start-url', this.textInput('url', 'http://127.0.0.1:8000', text('url')))
      );
    } else {
      rows.push(
        this.row(
          'Base URL',
          'bcc-start-base_url',
          this.textInput('base_url', 'http://127.0.0.1:11434/v1', text('base_url'))
        ),
        this.row('Model', 'bcc-start-model', this.textInput('model', 'e.g. qwen2.5-coder:14b', text('model'))),
        this.row(
          'Prompt templates folder (optional)',
          'bcc-start-templates',
          this.textInput('templates', 'e.g. prompts (its <agent>.md files replace ours)', text('templates'))
        )
      );
    }
    replaceChildren(this.fieldsNode, ...rows);
    this.applyAvailability();
  }

  private applyAvailability(): void {
    for (const option of Array.from(this.kind.options)) {
      const info = this.planners.find(p => p.kind === option.value);
      option.disabled = info ? !info.available : false;
      option.title = info && !info.available ? info.reason ?? 'not available' : '';
      option.textContent =
        KIND_LABELS[option.value as PlannerKindInfo['kind']] +
        (info && !info.available ? ' — unavailable' : '');
    }
    const selected = this.planners.find(p => p.kind === this.kind.value);
    const unavailable = selected && !selected.available;
    this.submit.disabled = Boolean(unavailable);
    this.submit.title = unavailable ? selected?.reason ?? '' : 'Start the workflow';
    if (unavailable) {
      this.showError(`${KIND_LABELS[selected.kind]}: ${selected.reason ?? 'not available'}`);
    } else {
      this.showError(null);
    }
  }

  private showError(message: string | null): void {
    replaceChildren(this.errorNode, message ?? '');
    this.errorNode.setAttribute('data-testid', message ? 'bcc-start-error' : '');
  }

  private fields(): StartFields {
    const values: Record<string, string> = {};
    for (const [name, input] of this.inputs) {
      values[name] = input.value;
    }
    return {
      kind: this.kind.value as PlannerKindInfo['kind'],
      values,
      problem: this.problem.value,
      files: this.files.value,
      autoConfirm: this.autoConfirm.checked,
      confirmIrreversible: this.confirmIrreversible.checked
    };
  }

  private async send(): Promise<void> {
    const built = buildStartBody(this.options.notebookPath, this.fields());
    if ('error' in built) {
      this.showError(built.error);
      return;
    }
    this.showError(null);
    this.submit.disabled = true;
    this.submit.textContent = 'Starting…';
    try {
      await this.options.onSubmit(built.body);
    } catch (error) {
      const message =
        error instanceof ApiError ? error.body.message : `Could not start: ${String(error)}`;
      this.showError(message);
    } finally {
      this.submit.disabled = false;
      this.submit.textContent = 'Start';
    }
  }
}
