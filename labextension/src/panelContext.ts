/**
 * What the panel's section renderers need from the panel: its remembered open/closed
 * sections, whether a command is in flight, the FSM table and the actions a button triggers.
 * Each section module turns the snapshot into DOM through this, so none of them holds state.
 */
import type { FsmTransition } from './types';
import type { ControlId } from './view';

export interface SectionContext {
  /** Open state of collapsible sections and tree nodes the user chose (kept across renders). */
  readonly openState: Map<string, boolean>;
  /** A command is in flight: buttons are disabled meanwhile. */
  readonly busy: boolean;
  /** No engine drives the workflow in this server (deleted here, or run by the command
   *  line): its controls and decisions cannot act, so they are disabled, saying why. */
  readonly stored: boolean;
  /** The FSM transition table (for which controls apply). */
  readonly transitions: FsmTransition[];
  /** Step titles seen in this workflow's snapshots (a completed stage records ids only). */
  readonly stepTitles: ReadonlyMap<string, string>;
  /** Press a control button (run, pause, cancel, ...). */
  control(id: ControlId): Promise<boolean>;
  /** Approve or reject the pending decision ``id``. */
  decide(decision: 'approve' | 'reject', id?: string): Promise<boolean>;
  /** The "Planner exchange" section of behavior ``behaviorId`` (null: nothing to show). */
  exchange(behaviorId: string, key: string): HTMLElement | null;
}
