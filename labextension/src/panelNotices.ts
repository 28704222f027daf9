/**
 * The panel's notices: short messages after a command (info fades, conflicts and errors stay
 * until dismissed) and the offer to reload a notebook the workflow changed under unsaved edits.
 */
import { h, replaceChildren } from './dom';

/** ``waiting``: a command in flight, shown until its answer replaces it. */
export type NoticeKind = 'info' | 'waiting' | 'conflict' | 'error';

/** The two notice areas of the panel (owned by the panel, placed by it in its layout). */
export class PanelNotices {
  /** Where command notices show. */
  readonly node: HTMLElement = h('div', { class: 'jp-NotebookBcc-notices', 'aria-live': 'polite' });
  /** Where the reload offer shows. */
  readonly reloadNode: HTMLElement = h('div', { class: 'jp-NotebookBcc-reloadArea' });
  /** Where the offer to connect the notebook to the workflow's kernel shows. */
  readonly kernelNode: HTMLElement = h('div', { class: 'jp-NotebookBcc-kernelArea' });
  private reloadAction: (() => void) | null = null;
  private connectAction: (() => void) | null = null;

  /** Show a short notice; info notices fade after a while, others stay until dismissed or
   *  replaced (a ``waiting`` notice by its command's answer). */
  notify(kind: NoticeKind, message: string): void {
    const dismiss = h(
      'button',
      {
        class: 'jp-NotebookBcc-noticeClose',
        'aria-label': 'Dismiss',
        title: 'Dismiss',
        onclick: () => notice.remove()
      },
      '×'
    );
    const notice = h(
      'div',
      {
        class: `jp-NotebookBcc-notice jp-NotebookBcc-notice-${kind === 'waiting' ? 'info' : kind}`,
        'data-testid': 'bcc-notice',
        'data-kind': kind,
        role: kind === 'info' || kind === 'waiting' ? 'status' : 'alert'
      },
      h('span', { class: 'jp-NotebookBcc-noticeText' }, message),
      dismiss
    );
    replaceChildren(this.node, notice);
    if (kind === 'info') {
      window.setTimeout(() => notice.remove(), 8000);
    }
  }

  /** Remove the command notices (another notebook is shown: they were about the last one). */
  clear(): void {
    replaceChildren(this.node);
  }

  /** The notebook on disk changed while the user has unsaved edits: offer a reload (D10). */
  showReloadNotice(reload: () => void): void {
    this.reloadAction = reload;
    offer(
      this.reloadNode,
      { notice: 'bcc-reload-notice', button: 'bcc-reload' },
      'The workflow added cells to this notebook, but it has unsaved edits. Save to keep ' +
        'both (your cells are merged), or reload to see the workflow’s version.',
      'Reload',
      () => this.reloadAction?.()
    );
  }

  hideReloadNotice(): void {
    this.reloadAction = null;
    replaceChildren(this.reloadNode);
  }

  get reloadNoticeShown(): boolean {
    return this.reloadNode.firstChild !== null;
  }

  /** The workflow runs on a kernel the open notebook is not connected to: offer to connect. */
  showKernelNotice(connect: () => void): void {
    this.connectAction = connect;
    offer(
      this.kernelNode,
      { notice: 'bcc-kernel-notice', button: 'bcc-kernel-connect' },
      'The workflow runs on a kernel this notebook is not connected to, so its variables ' +
        'are out of reach here. Connect to open the notebook again on that kernel (unsaved ' +
        'edits are saved first).',
      'Connect',
      () => this.connectAction?.()
    );
  }

  hideKernelNotice(): void {
    this.connectAction = null;
    replaceChildren(this.kernelNode);
  }
}

/** Draw in ``area`` (unless it shows one already) a notice saying ``text`` with one button
 *  that calls ``act``; ``ids`` are their test ids. */
function offer(
  area: HTMLElement,
  ids: { notice: string; button: string },
  text: string,
  label: string,
  act: () => void
): void {
  if (area.firstChild) {
    return;
  }
  replaceChildren(
    area,
    h(
      'div',
      {
        class: 'jp-NotebookBcc-notice jp-NotebookBcc-notice-info',
        'data-testid': ids.notice,
        role: 'status'
      },
      h('span', { class: 'jp-NotebookBcc-noticeText' }, text),
      h('button', { class: 'jp-NotebookBcc-button', 'data-testid': ids.button, onclick: act }, label)
    )
  );
}
