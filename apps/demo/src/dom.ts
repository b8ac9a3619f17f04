// Building DOM without HTML strings: text always goes in as text nodes or textContent, never as markup, so a
// title like `<img src=x onerror=alert(1)>` shows exactly as typed.

type Child = Node | string | number | null | undefined | false;

export interface Props {
  className?: string;
  /** Set as attributes (aria-*, role, type, ...); `false`/`null` leave the attribute out. */
  attrs?: Record<string, string | number | boolean | null | undefined>;
  dataset?: Record<string, string>;
  text?: string;
  on?: { [K in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[K]) => void };
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  apply(el, props);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  append(el, children);
  return el;
}

function apply(el: HTMLElement, props: Props): void {
  if (props.className) el.className = props.className;
  if (props.text !== undefined) el.textContent = props.text;
  for (const [name, value] of Object.entries(props.attrs ?? {})) setAttr(el, name, value);
  for (const [name, value] of Object.entries(props.dataset ?? {})) el.dataset[name] = value;
  for (const [name, handler] of Object.entries(props.on ?? {})) {
    el.addEventListener(name, handler as EventListener);
  }
}

function append(el: Element, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
}

/** replaceChildren that skips null/false children. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

export function setAttr(
  el: Element,
  name: string,
  value: string | number | boolean | null | undefined,
): void {
  if (value === false || value === null || value === undefined) el.removeAttribute(name);
  else el.setAttribute(name, value === true ? '' : String(value));
}

/** Sets textContent only when it differs, so unchanged rows cost no DOM write. */
export function setText(el: Node, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

/** A stable colour for a participant id. */
export function colorFor(id: string): string {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  return `hsl(${h % 360} 65% 42%)`;
}
