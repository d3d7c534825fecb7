// Renders the agent's markdown safely (underscores inside words, as in snake_case, stay text): the result is built from DOM nodes and
// text nodes only (never innerHTML), so no model output and no other user's
// text can inject HTML or script; links open only http(s) and mailto URLs.
// Every source character is kept (markers such as ** or ``` sit in hidden
// spans), so an element's textContent is exactly the markdown it shows:
// copying keeps the markdown, and the page's text matches the transcript.

const INLINE =
  /(`[^`\n]+`)|(\*\*[^*\n]+?\*\*|(?<![\w_])__[^_\n]+?__(?![\w_]))|(~~[^~\n]+?~~)|(\[[^\]\n]+\]\([^)\s]+\))|(https?:\/\/[^\s<>()]+)|((?<![\w*])\*[^*\s][^*\n]*?\*(?![\w*])|(?<![\w_])_[^_\s][^_\n]*?_(?![\w_]))/;
const LIST = /^(\s*)([-*+]|\d{1,9}[.)])\s+/;
const HEADING = /^(#{1,6})\s+/;
const QUOTE = /^>\s?/;
const FENCE = /^\s*```/;

function el(tag, ...children) {
  const node = document.createElement(tag);
  node.append(...children);
  return node;
}

/** Markdown syntax kept in the text but not shown. */
function syntax(text) {
  const span = el("span", text);
  span.className = "md-syntax";
  return span;
}

function safeHref(url) {
  try {
    const parsed = new URL(url);
    return ["http:", "https:", "mailto:"].includes(parsed.protocol) ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

function link(href, ...children) {
  const a = el("a", ...children);
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer nofollow";
  return a;
}

/** Inline markdown of one line: code, bold, strike, italic, links and bare URLs. */
export function renderInline(text) {
  const out = [];
  let rest = text;
  for (let m = INLINE.exec(rest); m; m = INLINE.exec(rest)) {
    if (m.index > 0) out.push(rest.slice(0, m.index));
    const [whole, code, bold, strike, mdLink, bare] = m;
    if (code) out.push(el("code", syntax("`"), code.slice(1, -1), syntax("`")));
    else if (bold)
      out.push(
        el("strong", syntax(bold.slice(0, 2)), ...renderInline(bold.slice(2, -2)), syntax(bold.slice(-2))),
      );
    else if (strike) out.push(el("del", syntax("~~"), ...renderInline(strike.slice(2, -2)), syntax("~~")));
    else if (mdLink) {
      const split = mdLink.indexOf("](");
      const label = mdLink.slice(1, split);
      const url = mdLink.slice(split + 2, -1);
      const href = safeHref(url);
      out.push(href ? link(href, syntax("["), ...renderInline(label), syntax(`](${url})`)) : mdLink);
    } else if (bare) {
      const href = safeHref(bare);
      out.push(href ? link(href, bare) : bare);
    } else out.push(el("em", syntax(whole[0]), ...renderInline(whole.slice(1, -1)), syntax(whole.slice(-1))));
    rest = rest.slice(m.index + whole.length);
  }
  if (rest) out.push(rest);
  return out;
}

function fenceBlock(lines, start) {
  let end = start + 1;
  while (end < lines.length && !FENCE.test(lines[end])) end++;
  const closed = end < lines.length;
  const body = lines.slice(start + 1, end);
  const code = el("code", syntax(lines[start] + (body.length || closed ? "\n" : "")), body.join("\n"));
  if (closed) code.append(syntax((body.length ? "\n" : "") + lines[end]));
  return { node: el("pre", code), next: closed ? end + 1 : end };
}

function listBlock(lines, start) {
  const ordered = /\d/.test(LIST.exec(lines[start])[2]);
  const list = el(ordered ? "ol" : "ul");
  let i = start;
  for (; i < lines.length; i++) {
    const m = LIST.exec(lines[i]);
    if (!m || /\d/.test(m[2]) !== ordered) break;
    if (i > start) list.append("\n");
    list.append(el("li", syntax(m[0]), ...renderInline(lines[i].slice(m[0].length))));
  }
  return { node: list, next: i };
}

/** Lines that belong together (a quote or a paragraph), joined with visible line breaks. */
function linesBlock(tag, lines, start, belongs, marker) {
  const node = el(tag);
  let i = start;
  for (; i < lines.length && (i === start || belongs(lines[i])); i++) {
    if (i > start) node.append("\n", el("br"));
    const m = marker ? marker.exec(lines[i]) : null;
    if (m) node.append(syntax(m[0]));
    node.append(...renderInline(lines[i].slice(m ? m[0].length : 0)));
  }
  return { node, next: i };
}

function startsBlock(line) {
  return line.trim() === "" || FENCE.test(line) || LIST.test(line) || HEADING.test(line) || QUOTE.test(line);
}

/** A fragment showing `source` as markdown; its textContent equals `source`. */
export function renderMarkdown(source) {
  const fragment = document.createDocumentFragment();
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; ) {
    if (i > 0) fragment.append("\n");
    const line = lines[i];
    let block;
    if (line.trim() === "") block = { node: document.createTextNode(line), next: i + 1 };
    else if (FENCE.test(line)) block = fenceBlock(lines, i);
    else if (LIST.test(line)) block = listBlock(lines, i);
    else if (HEADING.test(line)) {
      const m = HEADING.exec(line);
      const heading = el(
        `h${Math.min(m[1].length + 2, 6)}`,
        syntax(m[0]),
        ...renderInline(line.slice(m[0].length)),
      );
      block = { node: heading, next: i + 1 };
    } else if (QUOTE.test(line)) block = linesBlock("blockquote", lines, i, (l) => QUOTE.test(l), QUOTE);
    else block = linesBlock("p", lines, i, (l) => !startsBlock(l));
    fragment.append(block.node);
    i = block.next;
  }
  return fragment;
}
