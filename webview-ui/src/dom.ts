/** A tiny element builder: text children are always text nodes, so nothing is parsed as HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; title?: string; dataset?: Record<string, string>; attrs?: Record<string, string> } = {},
  ...children: Array<Node | string | null | undefined | false>
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.className) element.className = props.className;
  if (props.title) element.title = props.title;
  for (const [key, value] of Object.entries(props.dataset ?? {})) element.dataset[key] = value;
  for (const [key, value] of Object.entries(props.attrs ?? {})) element.setAttribute(key, value);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return element;
}

export function button(label: string, className: string, onClick: () => void, title?: string): HTMLButtonElement {
  const element = h('button', { className, title, attrs: { type: 'button' } }, label);
  element.addEventListener('click', onClick);
  return element;
}
