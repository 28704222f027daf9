/**
 * The kernel watch (src/kernelWatch.ts): it offers to connect an open notebook showing
 * "No Kernel" only while its workflow runs on a kernel the server holds for the path, and
 * connecting saves a dirty notebook before closing and opening it again.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Session } from '@jupyterlab/services';

import { KernelWatch } from '../src/kernelWatch';
import type { WorkflowSnapshot } from '../src/types';
import { loadSnapshot } from './helpers';

const PATH = 'work/a.ipynb';

interface FakeNotebook {
  sessionContext: {
    isDisposed: boolean;
    ready: Promise<void>;
    session: { kernel: { id: string } | null } | null;
  };
  context: { model: { dirty: boolean }; save: () => Promise<void> };
  close: () => void;
}

function notebook(kernel: string | null, dirty = false): FakeNotebook {
  return {
    sessionContext: {
      isDisposed: false,
      ready: Promise.resolve(),
      session: kernel ? { kernel: { id: kernel } } : null
    },
    context: { model: { dirty }, save: async () => undefined },
    close: () => undefined
  };
}

function running(status: string): WorkflowSnapshot {
  const snapshot = loadSnapshot('housing-waiting');
  (snapshot.run as { status: string }).status = status;
  return snapshot;
}

class Host {
  offers: Array<'offer' | 'none'> = [];
  connect: (() => void) | null = null;
  log: string[] = [];
  constructor(
    public open: FakeNotebook | undefined,
    public server: Session.IModel | undefined
  ) {}
  watch(): KernelWatch {
    return new KernelWatch({
      notebook: path => (path === PATH ? (this.open as unknown as NotebookPanel) : undefined),
      sessionOf: async () => this.server,
      open: async path => {
        this.log.push(`open ${path}`);
      },
      offer: connect => {
        this.connect = connect;
        this.offers.push(connect ? 'offer' : 'none');
      }
    });
  }
}

const SESSION = {
  id: 's1',
  name: 'a.ipynb',
  path: PATH,
  type: 'notebook',
  kernel: { id: 'k1', name: 'python3' }
} as Session.IModel;

describe('KernelWatch.check', () => {
  it('offers to connect a notebook with no kernel while its workflow runs on one', async () => {
    const host = new Host(notebook(null), SESSION);
    await host.watch().check(PATH, running('running'));
    assert.deepEqual(host.offers, ['offer']);
  });

  it('offers nothing when the notebook has its kernel', async () => {
    const host = new Host(notebook('k1'), SESSION);
    await host.watch().check(PATH, running('waiting'));
    assert.deepEqual(host.offers, ['none']);
  });

  it('offers nothing when the server holds no kernel for the path', async () => {
    const host = new Host(notebook(null), undefined);
    await host.watch().check(PATH, running('running'));
    assert.deepEqual(host.offers, []);
  });

  it('withdraws the offer once the workflow no longer holds a kernel', async () => {
    const host = new Host(notebook(null), SESSION);
    const watch = host.watch();
    await watch.check(PATH, running('paused'));
    await watch.check(PATH, running('completed'));
    assert.deepEqual(host.offers, ['offer', 'none']);
  });

  it('decides once Lab has looked for the session of a notebook being opened', async () => {
    const opening = notebook(null);
    opening.sessionContext.ready = Promise.resolve().then(() => {
      opening.sessionContext.session = { kernel: { id: 'k1' } }; // Lab found the path's session
    });
    const host = new Host(opening, SESSION);
    await host.watch().check(PATH, running('running'));
    assert.deepEqual(host.offers, ['none']);
  });

  it('offers nothing for a notebook that is not open', async () => {
    const host = new Host(undefined, SESSION);
    await host.watch().check(PATH, running('running'));
    assert.deepEqual(host.offers, ['none']);
  });
});

describe('KernelWatch connect', () => {
  it('saves a dirty notebook, closes it and opens it again', async () => {
    const open = notebook(null, true);
    const host = new Host(open, SESSION);
    open.context.save = async () => {
      host.log.push('save');
    };
    open.close = () => {
      host.log.push('close');
    };
    await host.watch().check(PATH, running('running'));
    assert.ok(host.connect, 'an offer to connect');
    host.connect();
    await new Promise(resolve => setImmediate(resolve));
    assert.deepEqual(host.log, ['save', 'close', `open ${PATH}`]);
    assert.deepEqual(host.offers, ['offer', 'none']);
  });
});
