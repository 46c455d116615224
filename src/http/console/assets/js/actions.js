// What an admin of a sequence may do from its page: add a range, change the cache and alert
// settings, retire it. Each form sends the API's own request and shows its refusal inline;
// a refused request changes nothing, so the form keeps what was typed.

import { api, enc } from "./api.js";
import { el, errorBox, field, heading, say } from "./dom.js";
import { mayAdmin } from "./scopes.js";

// A form that sends `request()` on submit, shows a refusal inline and re-renders on success.
function actionForm(title, fields, submitLabel, request, done, ctx) {
  const problem = el("div", { class: "problem" });
  const button = el("button", { type: "submit" }, submitLabel);
  const form = el("form", { class: "card action", "aria-label": title }, heading(title, 3), fields.map((f) => f.node), problem, button);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.replaceChildren();
    button.disabled = true;
    try {
      await request();
    } catch (error) {
      problem.append(errorBox(error));
      button.disabled = false;
      return;
    }
    await ctx.rerender();
    say(done);
  });
  return form;
}

const number = (input) => (input.value.trim() === "" ? undefined : Number(input.value));

function addRange(sequence, ctx) {
  const min = field("First value", { type: "number", name: "min", required: true, inputmode: "numeric" });
  const max = field("Last value", { type: "number", name: "max", required: true, inputmode: "numeric" },
    sequence.format ? "Must fit the carrier format's serial width; may not overlap any range in the namespace." : "May not overlap any range in the namespace.");
  return actionForm("Add a range", [min, max], "Add range",
    () => api("POST", `sequences/${enc(sequence.name)}/ranges`, { min: number(min.input), max: number(max.input) }),
    "Range added.", ctx);
}

function cacheSettings(sequence, ctx) {
  const size = field("Values cached per instance", { type: "number", min: 0, max: 100000, name: "cache_size", value: sequence.cache.size },
    "0 keeps it strict: every value drawn on the request path, no gaps. Keep carrier ranges strict.");
  const buffer = field("Seconds of use kept in hand", { type: "number", min: 0, max: 3600, name: "buffer_seconds", value: sequence.cache.buffer_seconds });
  const min = field("Refill below", { type: "number", min: 0, name: "cache_min", value: sequence.cache.min });
  return actionForm("Cache", [size, buffer, min], "Save cache settings",
    () => api("PATCH", `sequences/${enc(sequence.name)}`, {
      cache: { size: number(size.input) ?? 0, buffer_seconds: number(buffer.input), min: number(min.input) },
    }),
    "Cache settings saved.", ctx);
}

function alertSettings(sequence, ctx) {
  const remaining = field("Alert when fewer values left than", { type: "number", min: 0, name: "remaining_below", value: sequence.alerts.remaining_below }, "0 turns this alert off.");
  const days = field("Alert when it runs out within (days)", { type: "number", min: 0, max: 3650, step: "any", name: "days_left_below", value: sequence.alerts.days_left_below }, "0 turns this alert off.");
  return actionForm("Alerts", [remaining, days], "Save alert settings",
    () => api("PATCH", `sequences/${enc(sequence.name)}`, {
      alerts: { remaining_below: number(remaining.input), days_left_below: number(days.input) },
    }),
    "Alert settings saved.", ctx);
}

// Retiring is for good: the button stays disabled until the name is typed exactly.
function retire(sequence, ctx) {
  const typed = field(`Type ${sequence.name} to confirm`, { name: "confirm", autocomplete: "off", spellcheck: "false" },
    "A retired sequence hands out nothing more, and its name is never used again.");
  const form = actionForm("Retire", [typed], "Retire this sequence",
    () => api("DELETE", `sequences/${enc(sequence.name)}`), "Sequence retired.", ctx);
  form.classList.add("danger");
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  typed.input.addEventListener("input", () => { button.disabled = typed.input.value !== sequence.name; });
  return form;
}

export function actions(sequence, ctx) {
  const scopes = ctx.who.scopes;
  return el(
    "section",
    { class: "actions", "aria-labelledby": "actions-title" },
    heading("Actions", 2, "actions-title"),
    el("div", { class: "action-grid" },
      mayAdmin(scopes, sequence) && addRange(sequence, ctx),
      cacheSettings(sequence, ctx),
      alertSettings(sequence, ctx),
      retire(sequence, ctx)),
  );
}
