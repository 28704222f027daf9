/**
 * The panel's commands (D3): each is sent with the version of the snapshot on screen, so a
 * stale click is refused (409) instead of acting on old facts; 409 shows the fresh state and
 * says so, 400 explains. Destructive controls ask once.
 */
import { ApiError, BccApi } from './api';
import type { NoticeKind } from './panelNotices';
import { sendWhileMeant, whileStillAsked, type StillMeant } from './resend';
import type { Command, FsmTransition, WorkflowSnapshot } from './types';
import { DECISION_TITLES, controlViews, type ControlId } from './view';

/** After this long in flight, a command's notice says it waits for the running cell. */
export const SLOW_COMMAND_MS = 1500;

/** What the commands need from the panel. */
export interface CommandHost {
  readonly api: BccApi;
  /** The snapshot shown now. */
  readonly snapshot: WorkflowSnapshot | null;
  /** A command is in flight. */
  readonly busy: boolean;
  readonly transitions: FsmTransition[];
  /** Mark a command in flight (or done) and re-render. */
  setBusy(busy: boolean): void;
  /** Show a snapshot a command answered with. */
  show(snapshot: WorkflowSnapshot): void;
  /** Fetch the current snapshot (after a 409 without one). */
  refresh(): Promise<void>;
  notify(kind: NoticeKind, message: string): void;
  confirm(title: string, body: string, accept: string): Promise<boolean>;
}

/** Sends the panel's commands on behalf of ``host``. */
export class PanelCommands {
  /** Commands (by name) sent and still waiting for a running cell to end. */
  private readonly waiting = new Set<string>();

  constructor(private readonly host: CommandHost) {}

  /**
   * Send a D3 command based on the snapshot shown; 409 re-renders, 400 explains.
   *
   * ``stillMeant`` is for commands whose meaning does not depend on what the user saw
   * (pause, cancel of a workflow that keeps moving): given the fresh snapshot of a 409, it
   * returns the command to send again against it (a few times: see ``resend.ts``), or null
   * when the command no longer applies.
   */
  async send(
    command: Command,
    what: string,
    stillMeant?: StillMeant
  ): Promise<boolean> {
    const snapshot = this.host.snapshot;
    if (!snapshot || this.host.busy) {
      return false;
    }
    if (this.waiting.has(what)) {
      this.host.notify('waiting', `${what}: already sent; it applies once the running cell ends.`);
      return false;
    }
    this.host.setBusy(true);
    let holding = true;
    // A command applies between two steps. While a long cell runs, say why nothing happens
    // yet (until the answer comes), and give the other buttons back: a Cancel must stay
    // possible while a Pause waits for a cell that runs for minutes.
    const slow = setTimeout(() => {
      holding = false;
      this.waiting.add(what);
      this.host.notify(
        'waiting',
        `${what}: waiting for the running cell to finish; it applies then ` +
          '(interrupt the kernel to stop the cell sooner).'
      );
      this.host.setBusy(false);
    }, SLOW_COMMAND_MS);
    try {
      const fresh = await sendWhileMeant(
        this.host.api,
        snapshot.workflow_id,
        command,
        stillMeant
      );
      this.host.show(fresh);
      this.host.notify('info', `${what}: accepted.`);
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        const fresh = error.snapshot;
        if (fresh) {
          this.host.show(fresh);
        } else {
          await this.host.refresh();
        }
        this.host.notify(
          'conflict',
          `${what}: the workflow changed since you looked at it (someone or something ` +
            'acted first). The panel now shows its current state; check it and try again.'
        );
      } else if (error instanceof ApiError) {
        this.host.notify('error', `${what}: ${error.body.message}`);
      } else {
        this.host.notify('error', `${what}: ${String(error)}`);
      }
      return false;
    } finally {
      clearTimeout(slow);
      this.waiting.delete(what);
      if (holding) {
        this.host.setBusy(false);
      }
    }
  }

  /**
   * A control button (run, pause, cancel, ...); destructive ones ask once. The version sent
   * is the one on screen when the user acted: after the dialog for the destructive ones,
   * since the workflow may have moved while it was open.
   */
  async control(id: ControlId): Promise<boolean> {
    if (!this.host.snapshot) {
      return false;
    }
    const shown = (): number => this.host.snapshot?.version ?? 0;
    // Pause and cancel mean the same whatever the workflow did meanwhile: if it moved on
    // between the click and the server, send them once more while they still apply.
    const whileOffered =
      (make: (version: number) => Command) =>
      (fresh: WorkflowSnapshot): Command | null =>
        controlViews(fresh, this.host.transitions).some(c => c.id === id && c.enabled)
          ? make(fresh.version)
          : null;
    switch (id) {
      case 'run':
        return this.send({ action: 'run', expected_version: shown() }, 'Run');
      case 'pause': {
        const pause = (v: number): Command => ({ action: 'pause', expected_version: v });
        return this.send(pause(shown()), 'Pause', whileOffered(pause));
      }
      case 'cancel': {
        const ok = await this.host.confirm(
          'Cancel the workflow?',
          'A running cell finishes first (a question to the planner is dropped at once); ' +
            'then the workflow stops for good. Its notebook and record stay; a reset makes ' +
            'it startable again.',
          'Cancel workflow'
        );
        const cancel = (v: number): Command => ({ event: 'CANCEL', expected_version: v });
        return ok && this.send(cancel(shown()), 'Cancel', whileOffered(cancel));
      }
      case 'reset': {
        const ok = await this.host.confirm(
          'Reset the workflow?',
          'The workflow goes back to idle and plans again from the start. Cells already ' +
            'in the notebook stay.',
          'Reset'
        );
        return ok && this.send({ event: 'RESET', expected_version: shown() }, 'Reset');
      }
      case 'restart':
        return this.send({ action: 'restart', expected_version: shown() }, 'Start over');
      case 'retry':
        return this.send({ action: 'retry', expected_version: shown() }, 'Retry');
    }
  }

  /** Approve or reject a pending decision (the first one when ``id`` is omitted). */
  async decide(decision: 'approve' | 'reject', id?: string): Promise<boolean> {
    const snapshot = this.host.snapshot;
    const pending = snapshot?.run.pending ?? [];
    const target = id ? pending.find(p => p.id === id) : pending[0];
    if (!snapshot || !target) {
      this.host.notify('error', 'There is no pending decision to answer.');
      return false;
    }
    const verb = decision === 'approve' ? 'Approve' : 'Reject';
    // the same question still open after the workflow moved (a followed rename): the
    // answer still applies, sent again against the fresh version
    return this.send(
      { decide: target.id, decision, expected_version: snapshot.version },
      `${verb} ${DECISION_TITLES[target.kind].toLowerCase()}`,
      whileStillAsked(target, decision)
    );
  }
}
