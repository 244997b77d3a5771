// check.mjs parses Mermaid diagrams with Mermaid's own parser, the one that renders them on
// GitHub and in the Mermaid CLI, so a diagram that passes here is one those tools can draw.
//
// It reads a JSON array of {"source", "text"} on stdin and writes a JSON array of
// {"source", "error"} on stdout, one entry per diagram in the same order; "error" is "" when
// the diagram parses. It exits non-zero only when it cannot check at all (bad input, Mermaid
// missing): a broken diagram is an answer, not a failure of the checker.
//
//	cd docs/tools/mermaid-check && npm ci
//	echo '[{"source":"x","text":"flowchart LR\n a --> b"}]' | node check.mjs
//
// Why jsdom: mermaid.parse runs in Node, but the diagrams' parsers sanitise labels with
// DOMPurify, which needs a window and a document. jsdom provides both without a browser, so
// the check needs neither Chromium nor the Mermaid CLI; it does not lay diagrams out, which
// is where a browser would be needed, and layout never rejects a diagram that parsed.

import { JSDOM } from 'jsdom';

// Mermaid may log while it parses; stdout carries the answer alone.
for (const level of ['log', 'info', 'warn', 'debug']) {
  console[level] = (...args) => console.error(...args);
}

const dom = new JSDOM('<!doctype html><html><body></body></html>', { pretendToBeVisual: true });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
for (const name of ['DOMParser', 'Element', 'HTMLElement', 'Node', 'SVGElement']) {
  if (!(name in globalThis)) {
    globalThis[name] = dom.window[name];
  }
}

const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });

const chunks = [];
for await (const chunk of process.stdin) {
  chunks.push(chunk);
}
const diagrams = JSON.parse(Buffer.concat(chunks).toString('utf8'));
if (!Array.isArray(diagrams)) {
  throw new Error('want a JSON array of {"source", "text"} on stdin');
}

const results = [];
for (const { source, text } of diagrams) {
  let error = '';
  try {
    await mermaid.parse(text); // throws on any syntax error or unknown diagram type
  } catch (e) {
    error = String(e?.message ?? e).trim() || 'parse failed without a message';
  }
  results.push({ source, error });
}
process.stdout.write(JSON.stringify(results) + '\n');
