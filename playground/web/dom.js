// dom.js builds page elements from plain calls, so the pages never assemble HTML from
// strings (no escaping to forget): el("td", {class: "num"}, "42").

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    node.setAttribute(k, v === true ? "" : v);
  }
  node.append(...children.filter((c) => c !== undefined && c !== null && c !== false));
  return node;
}

export function clear(node) {
  node.replaceChildren();
}
