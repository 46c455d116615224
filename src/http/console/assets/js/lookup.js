// Look up a tracking number: carrier, layout, whether its check digit is right, and whether
// (and from which sequence) seqvend issued it.

import { enc, get } from "./api.js";
import { clear, el, errorBox, facts, field } from "./dom.js";
import { count } from "./format.js";

function answer(found) {
  const issued = found.issued
    ? el("span", {}, "Yes, by ", el("a", { href: `#/sequences/${enc(found.issued.sequence)}` }, found.issued.sequence), ` (value ${count(found.issued.value)})`)
    : "No (or by a sequence this token cannot read)";
  return el("section", { class: "card", "aria-live": "polite" },
    el("h2", {}, found.number),
    facts([
      ["Valid", found.valid ? "✓ Yes: a known layout, check digit right" : "✗ No: no known layout matches, or the check digit is wrong"],
      ["Carrier", found.carrier ?? "unknown"],
      ["Kind", found.kind ?? "unknown"],
      ["Serial", found.serial ?? "—"],
      ["Issued by seqvend", issued],
    ]));
}

export async function lookupPage(main, ctx, initial) {
  const number = field("Tracking number", { name: "number", autocomplete: "off", spellcheck: "false", required: true, maxlength: 80, value: initial },
    "Spaces and lower case are fine.");
  const out = el("div", { id: "lookup-result" });
  const form = el("form", { class: "card narrow", role: "search" }, number.node, el("button", { type: "submit" }, "Look up"));
  const look = async () => {
    out.replaceChildren(el("p", { class: "loading" }, "Looking up…"));
    try {
      out.replaceChildren(answer(await get(`tracking-numbers/${enc(number.input.value.trim())}`)));
    } catch (error) {
      out.replaceChildren(errorBox(error));
    }
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    history.replaceState(null, "", `#/lookup/${enc(number.input.value.trim())}`);
    look();
  });
  clear(main).append(el("h1", { tabindex: "-1" }, "Look up a number"), form, out);
  if (initial) await look();
}
