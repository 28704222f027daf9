/**
 * A tiny element builder: the panel is plain DOM, text is always set as text (never HTML),
 * so nothing a planner or a kernel wrote can inject markup.
 */

import { idParts, svgNaturalSize } from './view';

export type Child = Node | string | null | undefined | false;

export interface Attrs {
  [name: string]: string | number | boolean | null | undefined | ((event: Event) => void);
}

/** ``text`` as text nodes with a line-break opportunity (``<wbr>``) between its
 *  ``idParts``: a long identifier wraps after an underscore, a dot or a slash. */
export function breakable(text: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  idParts(text).forEach((part, index) => {
    if (index > 0) {
      fragment.appendChild(document.createElement('wbr'));
    }
    fragment.appendChild(document.createTextNode(part));
  });
  return fragment;
}

/** ``h('div', {class: 'x', 'data-testid': 'bcc-tree'}, child, ...)``. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) {
      continue;
    }
    if (typeof value === 'function') {
      listen(element, name.replace(/^on/, ''), value);
    } else if (name === 'class') {
      element.className = String(value);
    } else if (value === true) {
      element.setAttribute(name, '');
    } else {
      element.setAttribute(name, String(value));
    }
  }
  append(element, children);
  return element;
}

/** Appends children, turning strings into text nodes. */
export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** Replaces all children of ``parent``. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  while (parent.firstChild) {
    parent.removeChild(parent.firstChild);
  }
  append(parent, children);
}

/**
 * Re-render ``parent``'s children, keeping the stable ones: a child whose ``data-testid`` is
 * in ``stable`` stays the same element when the new one has the same shape, its attributes,
 * text and handlers brought up to date in place (:func:`morph`). A re-render while the user
 * presses one of its buttons then does not swap the button under the pointer (the press
 * would be lost: no click on a node that left the page between mouse down and up), nor take
 * its focus -- also when the button's title or state changed meanwhile.
 */
export function patchChildren(parent: Element, stable: ReadonlySet<string>, ...children: Child[]): void {
  const now = new Map<string, Element>();
  for (const child of Array.from(parent.children)) {
    const testid = child.getAttribute('data-testid');
    if (testid && stable.has(testid)) {
      now.set(testid, child);
    }
  }
  const next: Node[] = [];
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    const node = typeof child === 'string' ? document.createTextNode(child) : child;
    const testid = node instanceof Element ? node.getAttribute('data-testid') : null;
    const current = testid ? now.get(testid) : undefined;
    next.push(current && morph(current, node as Element) ? current : node);
  }
  const wanted = new Set(next);
  for (const child of Array.from(parent.childNodes)) {
    if (!wanted.has(child)) {
      parent.removeChild(child);
    }
  }
  next.forEach((node, index) => {
    const there = parent.childNodes[index] ?? null;
    if (there !== node) {
      parent.insertBefore(node, there);
    }
  });
}

/** Attributes that name what an element stands for: never morphed into another value (a
 *  card of one decision does not become another decision's, with what was typed in it). */
const IDENTITY_ATTRIBUTES = ['data-decision-id', 'data-testid'];

/** The handlers :func:`h` attached, by element and event type (see :func:`listen`). */
const handlers = new WeakMap<Element, Map<string, (event: Event) => void>>();

/** Attach ``handler`` through one listener per type that calls the element's current handler,
 *  so :func:`morph` can hand an element the handler of the element it replaces. */
function listen(element: Element, type: string, handler: (event: Event) => void): void {
  let own = handlers.get(element);
  if (!own) {
    own = new Map();
    handlers.set(element, own);
  }
  if (!own.has(type)) {
    element.addEventListener(type, event => handlers.get(element)?.get(type)?.(event));
  }
  own.set(type, handler);
}

/**
 * Make ``current`` (in the page) look and act like ``next`` (just rendered) without
 * replacing it: attributes, text and handlers are synced, children pairwise when they have
 * the same shape (else replaced). False, touching nothing, when the two are not the same
 * kind of element (another tag, another identity).
 */
export function morph(current: Element, next: Element): boolean {
  if (current.tagName !== next.tagName) {
    return false;
  }
  if (IDENTITY_ATTRIBUTES.some(name => current.getAttribute(name) !== next.getAttribute(name))) {
    return false;
  }
  for (const name of current.getAttributeNames()) {
    if (!next.hasAttribute(name)) {
      current.removeAttribute(name);
    }
  }
  for (const name of next.getAttributeNames()) {
    const value = next.getAttribute(name) as string;
    if (current.getAttribute(name) !== value) {
      current.setAttribute(name, value);
    }
  }
  const wanted = handlers.get(next);
  for (const type of handlers.get(current)?.keys() ?? []) {
    if (!wanted?.has(type)) {
      handlers.get(current)?.delete(type);
    }
  }
  for (const [type, handler] of wanted ?? []) {
    listen(current, type, handler);
  }
  const have = Array.from(current.childNodes);
  const want = Array.from(next.childNodes);
  const pairs = have.length === want.length && have.every((node, i) => sameShape(node, want[i]));
  if (pairs && have.every((node, i) => syncChild(node, want[i]))) {
    return true;
  }
  current.replaceChildren(...want);
  return true;
}

function sameShape(a: Node, b: Node): boolean {
  return a.nodeType === b.nodeType && a.nodeName === b.nodeName;
}

function syncChild(current: Node, next: Node): boolean {
  if (current instanceof Element && next instanceof Element) {
    return morph(current, next);
  }
  if (current.nodeValue !== next.nodeValue) {
    current.nodeValue = next.nodeValue;
  }
  return true;
}

/** A collapsible section whose open state survives re-renders (keyed in ``openState``). */
export function section(
  key: string,
  title: string,
  openState: Map<string, boolean>,
  defaultOpen: boolean,
  testid: string,
  ...body: Child[]
): HTMLDetailsElement {
  const open = openState.get(key) ?? defaultOpen;
  const details = h(
    'details',
    { class: 'jp-NotebookBcc-section', 'data-key': key, 'data-testid': testid, open },
    h('summary', { class: 'jp-NotebookBcc-sectionTitle' }, title),
    ...body
  );
  details.addEventListener('toggle', () => openState.set(key, details.open));
  return details;
}

/** A two-column table of label / value rows. */
export function keyValueTable(rows: Array<[string, string]>, testid?: string): HTMLTableElement {
  return h(
    'table',
    { class: 'jp-NotebookBcc-kv', 'data-testid': testid },
    h(
      'tbody',
      {},
      ...rows.map(([label, value]) =>
        h('tr', {}, h('th', { scope: 'row' }, label), h('td', {}, value))
      )
    )
  );
}

/**
 * ``figure`` (Mermaid's rendering: an image of an SVG, or an inline SVG) in a scrolling box at
 * its drawing size, for a main-area tab.
 */
export function fullSizeFigure(figure: HTMLElement): HTMLElement {
  const images = figure.tagName === 'IMG' ? [figure] : Array.from(figure.querySelectorAll('img'));
  for (const image of images as HTMLImageElement[]) {
    const size = svgNaturalSize(image.src);
    if (size) {
      image.style.width = `${Math.round(size.width)}px`;
      // fitting to the tab shrinks a wide drawing to the tab, never below its own size
      image.style.setProperty('--bcc-drawing-width', `${Math.round(size.width)}px`);
      image.style.maxWidth = 'none';
      image.style.height = 'auto';
    }
  }
  const box = h(
    'div',
    { class: 'jp-NotebookBcc-fullFigure', 'data-testid': 'bcc-diagram-view' },
    h('div', { class: 'jp-NotebookBcc-hint' }, 'Click the diagram to fit it to the tab or back.'),
    figure
  );
  figure.addEventListener('click', () => box.classList.toggle('jp-mod-fit'));
  return box;
}
