// A sequence's page: its figures, ranges as a timeline, usage over time with the forecast,
// its carrier format and next number, its events, and (for an admin of it) its actions.

import { enc, get } from "./api.js";
import { clear, el, errorBox, facts, heading } from "./dom.js";
import { count, daysLeft, rate, when } from "./format.js";
import { alertBadges, sizeBars } from "./overview.js";
import { usageChart } from "./chart.js";
import { actions } from "./actions.js";
import { allows } from "./scopes.js";

const EVENT_PAGE = 100;

function rangeRow(range) {
  const capacity = range.max - range.min + 1;
  const used = capacity - range.remaining;
  const share = Math.min(1, used / capacity);
  return el(
    "li",
    { class: `range range-${range.status}` },
    el("div", { class: "range-head" },
      el("strong", {}, `${count(range.min)} – ${count(range.max)}`), " ",
      el("span", { class: `badge status-${range.status}` }, range.status)),
    el("div", { class: "bar", role: "img", "aria-label": `${Math.round(share * 100)}% used` },
      el("span", { class: "bar-fill used", dataset: { share: share.toFixed(3) } })),
    el("div", { class: "range-foot" },
      `${count(used)} used · ${count(range.remaining)} left`,
      range.next !== null ? ` · next ${count(range.next)}` : "",
      " · PostgreSQL sequence ", el("code", {}, range.pg_sequence)),
  );
}

function summary(sequence) {
  const days = sequence.usage.exhausts_at ? (Date.parse(sequence.usage.exhausts_at) - Date.now()) / 86400_000 : null;
  const cache = sequence.cache.size
    ? `cached: up to ${count(sequence.cache.size)} values per instance, ${sequence.cache.buffer_seconds} s buffer, refill below ${count(sequence.cache.min)}`
    : "strict (every value drawn on the request path)";
  return facts([
    ["Namespace", el("code", {}, sequence.namespace)],
    ["Status", el("span", { class: `badge status-${sequence.status}` }, sequence.status)],
    ["Remaining", count(sequence.remaining)],
    ["Rate", `${rate(sequence.usage.per_second_1h)} over 1 h · ${rate(sequence.usage.per_second_24h)} over 24 h`],
    ["Exhausts", when(sequence.usage.exhausts_at)],
    ["Days left", daysLeft(days)],
    ["Alerts raised", alertBadges(sequence.alerts.raised)],
    ["Alert thresholds", `below ${count(sequence.alerts.remaining_below)} left, or within ${sequence.alerts.days_left_below} days (0 = off)`],
    ["Cache", cache],
    ["Created", when(sequence.created_at)],
  ]);
}

function formatSection(sequence, usage) {
  if (!sequence.format) return el("p", {}, "A plain sequence: values are handed out as numbers.");
  const parameters = Object.entries(sequence.format).map(([key, value]) => [key, el("code", {}, String(value))]);
  return [
    facts([
      ...parameters,
      ["Next value", count(usage.next_value)],
      ["Next number it would print", usage.next_number ? el("code", { class: "number" }, usage.next_number) : "none: no value left"],
    ]),
  ];
}

// Newest first, a page at a time: a sequence with a long history shows its latest at once,
// and "Older events" reads the page before.
function latestEvents(name, before) {
  const from = before === undefined ? "order=newest" : `before=${before}`;
  return get(`sequences/${enc(name)}/events?${from}&limit=${EVENT_PAGE}`);
}

const eventRange = (r) => (r ? `${count(r.min)} – ${count(r.max)}` : "");

function eventRow(e) {
  return el("tr", {},
    el("td", { "data-label": "When" }, when(e.at)),
    el("td", { "data-label": "What" }, e.kind.replaceAll("_", " ")),
    el("td", { "data-label": "Range" }, eventRange(e.range)),
    el("td", { "data-label": "By" }, e.token ? `${e.actor} (${e.token})` : e.actor),
    el("td", { "data-label": "Detail" }, e.detail ?? ""));
}

function eventTable(name, first) {
  const body = el("tbody", {}, first.events.map(eventRow));
  const status = el("p", { class: "muted", role: "status" });
  const older = el("button", { type: "button", class: "secondary older-events" }, "Older events");
  let next = first.next;
  const shown = () => {
    older.hidden = next === null;
    status.textContent = `${count(body.rows.length)} newest events shown${next === null ? " (all of them)" : ""}.`;
  };
  older.onclick = async () => {
    older.disabled = true;
    try {
      const page = await latestEvents(name, next);
      body.append(...page.events.map(eventRow));
      next = page.next;
      shown();
    } catch (error) {
      status.replaceChildren(errorBox(error));
    } finally {
      older.disabled = false;
    }
  };
  shown();
  return [
    el("table", { class: "events" },
      el("caption", { class: "visually-hidden" }, "Events, newest first"),
      el("thead", {}, el("tr", {}, ["When", "What", "Range", "By", "Detail"].map((h) => el("th", { scope: "col" }, h)))),
      body),
    status,
    older,
  ];
}

export async function sequencePage(main, ctx, name) {
  clear(main).append(el("h1", { tabindex: "-1" }, name), el("p", { class: "loading", "aria-busy": "true" }, "Loading…"));
  let sequence, usage, events;
  try {
    [sequence, usage, events] = await Promise.all([
      get(`sequences/${enc(name)}`),
      get(`sequences/${enc(name)}/usage`),
      latestEvents(name),
    ]);
  } catch (error) {
    clear(main).append(el("h1", { tabindex: "-1" }, name), errorBox(error), el("p", {}, el("a", { href: "#/" }, "Back to the sequences")));
    return;
  }
  const kind = sequence.format ? sequence.format.kind : "plain";
  clear(main).append(
    el("p", { class: "crumbs" }, el("a", { href: "#/" }, "Sequences"), " › "),
    el("h1", { tabindex: "-1" }, sequence.name, " ", el("small", { class: "muted" }, kind)),
    summary(sequence),
    el("section", { "aria-labelledby": "ranges-title" }, heading("Ranges", 2, "ranges-title"), el("ol", { class: "timeline" }, sequence.ranges.map(rangeRow))),
    el("section", { "aria-labelledby": "usage-title" }, heading("Usage", 2, "usage-title"), usageChart(usage.samples, sequence)),
    el("section", {}, heading("Carrier format", 2), formatSection(sequence, usage)),
    allows(ctx.who.scopes, "admin", sequence) && sequence.status !== "retired" ? actions(sequence, ctx) : "",
    el("section", {}, heading("Events", 2), eventTable(sequence.name, events)),
  );
  sizeBars(main);
  performance.mark("sequence-interactive");
}
