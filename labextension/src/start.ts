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
import { buildStartBody, startErrorMessage, type StartFields } from './startBody';
import {
  browserStorage,
  recallStart,
  rememberStart,
  type KeyValueStore,
  type RememberedStart
} from './startMemory';
import { besideBlueprint, folderOf, pathHint, relativeFrom } from './startPaths';
import { removeEarlierLabel } from './earlierRun';

/** Where Browse opens and what it lists. */
export interface BrowseOptions {
  /** API folder the dialog opens in. */
  folder?: string;
  /** Lower-case file endings to list (folders are always listed); all files when absent. */
  extensions?: string[];
}

/** What the form asks beside the request body. */
export interface StartChoices {
  /** Remove the cells of the notebook's earlier workflows first (as ``notebook-bcc run``). */
  removeEarlier: boolean;
}

export interface StartFormOptions {
  api: BccApi;
  notebookPath: string;
  browse(title: string, options?: BrowseOptions): Promise<string | null>;
  /** Whether a file exists (the blueprint beside the notebook is preselected when it does). */
  fileExists?(path: string): Promise<boolean>;
  /** Where the last values are remembered per notebook (default: localStorage). */
  storage?: KeyValueStore | null;
  /** How many cells of earlier workflows the open notebook holds (0 or absent: the form
   *  offers nothing to remove). */
  earlierCells?(): number;
  /** ``removeEarlier``: the earlier run's cells are to be removed before the start. */
  onSubmit(body: CreateWorkflowBody, choices: StartChoices): Promise<void>;
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
  /** "Remove the earlier run's N cells": shown while the notebook holds some. */
  private readonly removeEarlier: HTMLInputElement;
  private readonly removeEarlierRow: HTMLElement;
  private readonly removeEarlierText: HTMLElement;
  private planners: PlannerKindInfo[] = [];
  /** What the error line shows: a client-side check (re-checked on every edit) or other. */
  private errorSource: 'check' | 'server' | 'availability' | null = null;
  private readonly storage: KeyValueStore | null;
  private readonly remembered: RememberedStart | null;

  constructor(private readonly options: StartFormOptions) {
    this.storage = options.storage === undefined ? browserStorage() : options.storage;
    this.remembered = recallStart(this.storage, options.notebookPath);
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
    // checked by default, as the command line removes them when run again
    this.removeEarlier = h('input', {
      type: 'checkbox',
      checked: true,
      'data-testid': 'bcc-start-remove-earlier'
    });
    this.removeEarlierText = h('span', { 'data-testid': 'bcc-start-remove-earlier-label' });
    this.removeEarlierRow = h(
      'div',
      { class: 'jp-NotebookBcc-earlierRow' },
      h('label', { class: 'jp-NotebookBcc-check' }, this.removeEarlier, this.removeEarlierText),
      h(
        'div',
        { class: 'jp-NotebookBcc-fieldHint' },
        'Your own cells stay, in their order; the new run is written after them. Unchecked, ' +
          'the new run is written after the earlier one.'
      )
    );
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
      this.row(
        'Input files',
        'bcc-start-files',
        this.withBrowse(this.files, 'Choose an input file', true, {
          folder: folderOf(options.notebookPath)
        })
      ),
      h('div', { class: 'jp-NotebookBcc-fieldHint', 'data-testid': 'bcc-start-files-hint' }, pathHint(options.notebookPath)),
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
      this.removeEarlierRow,
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
    this.node.addEventListener('input', () => this.recheck());
    this.node.addEventListener('change', () => this.recheck());
    this.prefill();
    this.refreshEarlier();
    this.renderFields();
    void this.preselectBlueprint();
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

  /** Count the notebook's earlier-run cells again (its cells changed): the checkbox shows
   *  while there are some, with their number; the user's choice is kept. */
  refreshEarlier(): void {
    const count = this.options.earlierCells?.() ?? 0;
    this.removeEarlierRow.hidden = count === 0;
    this.removeEarlierText.textContent = count > 0 ? removeEarlierLabel(count) : '';
    this.removeEarlier.disabled = count === 0;
  }

  private row(label: string, id: string, control: HTMLElement): HTMLElement {
    return h(
      'div',
      { class: 'jp-NotebookBcc-formRow' },
      h('label', { for: id }, label),
      control
    );
  }

  /** The last values used on this notebook, if any (fields of the kind are set in renderFields). */
  private prefill(): void {
    const last = this.remembered;
    if (!last) {
      return;
    }
    this.kind.value = last.kind;
    this.problem.value = last.problem;
    this.files.value = last.files;
    this.autoConfirm.checked = last.autoConfirm;
    this.confirmIrreversible.checked = last.confirmIrreversible;
  }

  /** A ``workflow.yaml`` beside the notebook fills an empty Blueprint field (as the form
   *  names paths: relative to the notebook's folder). */
  private async preselectBlueprint(): Promise<void> {
    const beside = besideBlueprint(this.options.notebookPath);
    const exists = this.options.fileExists ? await this.options.fileExists(beside).catch(() => false) : false;
    const input = this.inputs.get('blueprint');
    if (exists && input && !input.value.trim() && this.kind.value === 'blueprint') {
      input.value = relativeFrom(folderOf(this.options.notebookPath), beside);
      this.recheck();
    }
  }

  /** After an edit: a check's error is re-checked (gone once fixed); a server error is cleared. */
  private recheck(): void {
    if (this.errorSource === 'server') {
      this.showError(null);
    } else if (this.errorSource === 'check') {
      const built = buildStartBody(this.options.notebookPath, this.fields());
      this.showError('error' in built ? built.error : null, 'check');
    }
  }

  private withBrowse(
    input: HTMLInputElement,
    title: string,
    appendValue: boolean,
    browse: BrowseOptions = {}
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
            const picked = await this.options.browse(title, browse);
            if (picked) {
              // every path of the form is named from the notebook's folder
              const chosen = relativeFrom(folderOf(this.options.notebookPath), picked);
              input.value =
                appendValue && input.value.trim() ? `${input.value.trim()}, ${chosen}` : chosen;
              this.recheck();
            }
          }
        },
        'Browse…'
      )
    );
  }

  /** Where the path field above is read from (the same for every path of the form). */
  private hint(testid: string): HTMLElement {
    return h('div', { class: 'jp-NotebookBcc-fieldHint', 'data-testid': testid }, pathHint(this.options.notebookPath));
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
    const serverDefault = (key: string): string =>
      typeof defaults[key] === 'string' ? (defaults[key] as string) : '';
    this.inputs.clear();
    const last: Record<string, string> = this.remembered?.kind === kind ? this.remembered.values : {};
    const text = (key: string, name: string): string => last[name] ?? serverDefault(key);
    const rows: HTMLElement[] = [];
    if (kind === 'blueprint') {
      const input = this.textInput('blueprint', 'workflow.yaml', text('path', 'blueprint'));
      rows.push(
        this.row(
          'Blueprint',
          'bcc-start-blueprint',
          this.withBrowse(input, 'Choose a blueprint (.yaml or .yml file)', false, {
            folder: folderOf(this.options.notebookPath),
            extensions: ['.yaml', '.yml']
          })
        ),
        this.hint('bcc-start-blueprint-hint')
      );
    } else if (kind === 'replay') {
      const input = this.textInput('transcript', 'recordings/housing-run', text('path', 'transcript'));
      rows.push(this.row('Recording folder', 'bcc-start-transcript', input), this.hint('bcc-start-transcript-hint'));
    } else if (kind === 'http') {
      rows.push(
        this.row('Server URL', 'bcc-start-url', this.textInput('url', 'http://127.0.0.1:8000', text('url', 'url')))
      );
    } else {
      rows.push(
        this.row(
          'Base URL',
          'bcc-start-base_url',
          this.textInput('base_url', 'http://127.0.0.1:11434/v1', text('base_url', 'base_url'))
        ),
        this.row('Model', 'bcc-start-model', this.textInput('model', 'e.g. qwen2.5-coder:14b', text('model', 'model'))),
        this.row(
          'Prompt templates folder (optional)',
          'bcc-start-templates',
          this.textInput('templates', 'e.g. prompts (its <agent>.md files replace ours)', text('templates', 'templates'))
        ),
        this.hint('bcc-start-templates-hint')
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
      this.showError(`${KIND_LABELS[selected.kind]}: ${selected.reason ?? 'not available'}`, 'availability');
    } else if (this.errorSource === 'availability') {
      this.showError(null);
    } else {
      this.recheck();
    }
  }

  private showError(message: string | null, source: 'check' | 'server' | 'availability' = 'server'): void {
    this.errorSource = message ? source : null;
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
      this.showError(built.error, 'check');
      return;
    }
    this.showError(null);
    this.submit.disabled = true;
    this.submit.textContent = 'Starting…';
    try {
      const removeEarlier = !this.removeEarlierRow.hidden && this.removeEarlier.checked;
      await this.options.onSubmit(built.body, { removeEarlier });
      rememberStart(this.storage, this.options.notebookPath, this.fields());
    } catch (error) {
      const message =
        error instanceof ApiError
          ? startErrorMessage(built.body.planner.kind as StartFields['kind'], error.body.message, error.body.details)
          : `Could not start: ${String(error)}`;
      this.showError(message);
    } finally {
      this.submit.disabled = false;
      this.submit.textContent = 'Start';
    }
  }
}
