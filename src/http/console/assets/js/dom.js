// Building the page by DOM calls only: every piece of data becomes a text node, never markup,
// so a name holding "<script>" or quotes shows as those characters and runs nothing.

const SVG = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const el = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
export const svg = (tag, attrs, ...children) =>
  build(document.createElementNS(SVG, tag), attrs, children);

export function clear(node) {
  node.replaceChildren();
  return node;
}

// The console's one line of news ("Range added", "Loading…"), read out by screen readers.
export function say(message) {
  document.getElementById("status").textContent = message;
}

// An inline refusal under a form: the API's message and code, announced at once.
export function errorBox(error) {
  const code = error.code ? ` (${error.code})` : "";
  return el("p", { class: "error", role: "alert" }, `${error.message}${code}`);
}

export function heading(text, level = 1, id = undefined) {
  return el(`h${level}`, { id, tabindex: level === 1 ? "-1" : undefined }, text);
}

// A labelled input: the label's `for` and the input's id tie them for assistive technology.
let fieldCount = 0;
export function field(label, attrs = {}, hint) {
  const id = `f${++fieldCount}`;
  const hintId = hint ? `${id}-hint` : undefined;
  const input = el(attrs.rows ? "textarea" : "input", { id, "aria-describedby": hintId, ...attrs });
  return {
    input,
    node: el(
      "div",
      { class: "field" },
      el("label", { for: id }, label),
      input,
      hint && el("small", { id: hintId }, hint),
    ),
  };
}

// A definition list from [term, value] pairs; values may be nodes.
export function facts(pairs) {
  return el(
    "dl",
    { class: "facts" },
    pairs.map(([term, value]) => el("div", {}, el("dt", {}, term), el("dd", {}, value))),
  );
}
