/**
 * The start form's fields -> the ``POST /workflows`` body, or the first thing that is wrong.
 *
 * Pure, so the checks are unit-tested; the server validates again (it is the authority), this
 * only saves a round trip for the obvious mistakes and keeps the message next to the field.
 */
import type { CreateWorkflowBody } from './api';
import type { PlannerKindInfo } from './types';
import { inputPaths, isYaml, notebookRelative } from './startPaths';

export interface StartFields {
  kind: PlannerKindInfo['kind'];
  /** The kind's own fields: blueprint, transcript, url, base_url, model. */
  values: Record<string, string>;
  problem: string;
  /** Comma- or newline-separated paths relative to the notebook's folder (``/x``: from the
   *  root), as every path of the form (the blueprint, a recording, a templates folder). */
  files: string;
  autoConfirm: boolean;
  confirmIrreversible: boolean;
}

/** Split the files field: commas or newlines, trimmed, empty entries dropped, no duplicates. */
export function splitPaths(text: string): string[] {
  const seen = new Set<string>();
  for (const part of text.split(/[,\n]/)) {
    const path = part.trim().replace(/^\/+/, '');
    if (path) {
      seen.add(path);
    }
  }
  return [...seen];
}

function required(values: Record<string, string>, name: string, label: string): string | { error: string } {
  const value = (values[name] ?? '').trim();
  return value ? value : { error: `${label} is required.` };
}

export function buildStartBody(
  notebookPath: string,
  fields: StartFields
): { body: CreateWorkflowBody } | { error: string } {
  let planner: Record<string, unknown>;
  switch (fields.kind) {
    case 'blueprint': {
      const path = required(fields.values, 'blueprint', 'Blueprint');
      if (typeof path !== 'string') {
        return path;
      }
      if (!isYaml(path)) {
        return { error: `Blueprint: ${path} is not a .yaml file.` };
      }
      planner = { kind: 'blueprint', path: notebookRelative(notebookPath, path) || path };
      break;
    }
    case 'replay': {
      const path = required(fields.values, 'transcript', 'Recording folder');
      if (typeof path !== 'string') {
        return path;
      }
      planner = { kind: 'replay', path: notebookRelative(notebookPath, path) || path };
      break;
    }
    case 'http': {
      const url = required(fields.values, 'url', 'Server URL');
      if (typeof url !== 'string') {
        return url;
      }
      if (!/^https?:\/\//i.test(url)) {
        return { error: 'Server URL must start with http:// or https://.' };
      }
      planner = { kind: 'http', url };
      break;
    }
    case 'llm': {
      const model = required(fields.values, 'model', 'Model');
      if (typeof model !== 'string') {
        return model;
      }
      const baseUrl = (fields.values['base_url'] ?? '').trim();
      if (baseUrl && !/^https?:\/\//i.test(baseUrl)) {
        return { error: 'Base URL must start with http:// or https://.' };
      }
      const templates = notebookRelative(notebookPath, fields.values['templates'] ?? '').replace(/\/+$/, '');
      planner = { kind: 'llm', model };
      if (baseUrl) {
        planner.base_url = baseUrl;
      }
      if (templates) {
        planner.templates = templates;
      }
      break;
    }
    default:
      return { error: `Unknown planner kind ${String(fields.kind)}.` };
  }
  const body: CreateWorkflowBody = {
    notebook_path: notebookPath,
    planner,
    files: inputPaths(notebookPath, fields.files),
    files_relative_to: 'notebook',
    planner_paths_relative_to: 'notebook',
    options: {
      auto_confirm: fields.autoConfirm,
      confirm_irreversible: fields.confirmIrreversible
    }
  };
  const problem = fields.problem.trim();
  if (problem) {
    body.problem = problem;
  }
  return { body };
}

/** The form's label of each field the server names in a refusal (``details.field``). */
const FIELD_LABELS: Record<string, Partial<Record<StartFields['kind'], string>> & { any?: string }> = {
  'planner.path': { blueprint: 'Blueprint', replay: 'Recording folder' },
  'planner.templates': { any: 'Prompt templates folder' },
  files: { any: 'Input files' }
};

/**
 * A refused start's message as the form shows it: led by the label of the field it is about
 * (the server names its REST field, e.g. ``planner.path``), so a path the server did not find
 * is seen next to the name of the box it was typed in.
 */
export function startErrorMessage(
  kind: StartFields['kind'],
  message: string,
  details?: Record<string, unknown> | null
): string {
  const field = typeof details?.field === 'string' ? details.field : '';
  const labels = FIELD_LABELS[field];
  const label = labels ? labels[kind] ?? labels.any : undefined;
  if (!label) {
    return message;
  }
  const rest = message
    .replace(/^input files not found: /, '')
    .replace(/(^|; )(planner\.path|planner\.templates|files\[\d+\]): /g, '$1');
  return `${label}: ${rest}`;
}
