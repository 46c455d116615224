// The sequences overview: every sequence the token can read, a page at a time, sorted and
// filtered by the server (GET /overview), most urgent first by default.

import { enc, get } from "./api.js";
import { clear, el, errorBox, say } from "./dom.js";
import { count, daysLeft, plural, rate, when } from "./format.js";

const PAGE = 50;
const SORTS = [
  ["days_left", "Days left (soonest first)"],
  ["name", "Name"],
  ["remaining", "Remaining (fewest first)"],
];
const ALERT_TEXT = {
  remaining_below: "Few values left",
  days_left_below: "Runs out soon",
};

export const alertText = (kind) => ALERT_TEXT[kind] ?? kind;

// The state lives in the URL's hash, so Back and a shared link show the same page.
function readState(params) {
  return {
    q: params.get("q") ?? "",
    sort: SORTS.some(([key]) => key === params.get("sort")) ? params.get("sort") : "days_left",
    offset: Math.max(0, Number.parseInt(params.get("offset") ?? "0", 10) || 0),
  };
}

function writeState(state) {
  const params = new URLSearchParams();
  if (state.q) params.set("q", state.q);
  if (state.sort !== "days_left") params.set("sort", state.sort);
  if (state.offset) params.set("offset", String(state.offset));
  const query = params.toString();
  history.replaceState(null, "", query ? `#/?${query}` : "#/");
}

export function remainingBar(row) {
  const capacity = row.capacity || 1;
  const share = Math.min(1, row.remaining / capacity);
  const low = row.alerts.includes("remaining_below");
  return el(
    "div",
    { class: "bar-cell" },
    el(
      "div",
      {
        class: `bar${low ? " low" : ""}`,
        role: "img",
        "aria-label": `${Math.round(share * 100)}% of the ranges in play left`,
      },
      el("span", { class: "bar-fill", dataset: { share: share.toFixed(3) } }),
    ),
    el("span", { class: "bar-text" }, `${count(row.remaining)} of ${count(row.capacity)}`),
  );
}

// Widths are set by script, not by a style attribute the CSP would refuse.
export function sizeBars(root) {
  for (const fill of root.querySelectorAll(".bar-fill[data-share]")) {
    fill.style.width = `${Number(fill.dataset.share) * 100}%`;
  }
}

export function alertBadges(alerts) {
  if (!alerts.length) return el("span", { class: "muted" }, "none");
  return alerts.map((kind) => el("span", { class: "badge alert" }, "⚠ ", alertText(kind)));
}

function row(sequence) {
  const cell = (label, ...content) => el("td", { "data-label": label }, ...content);
  return el(
    "tr",
    {},
    el("th", { scope: "row", "data-label": "Name" }, el("span", {},
      el("a", { href: `#/sequences/${enc(sequence.name)}` }, sequence.name),
      sequence.namespace !== sequence.name && el("small", { class: "muted block" }, sequence.namespace))),
    cell("Kind", sequence.kind ?? "plain"),
    cell("Status", el("span", { class: `badge status-${sequence.status}` }, sequence.status)),
    cell("Remaining", remainingBar(sequence)),
    cell("Rate 1 h", rate(sequence.per_second_1h)),
    cell("Rate 24 h", rate(sequence.per_second_24h)),
    cell("Exhausts", when(sequence.exhausts_at)),
    cell("Days left", daysLeft(sequence.days_left)),
    cell("Alerts", alertBadges(sequence.alerts)),
    cell("Cache", sequence.cache_size ? `cached (${count(sequence.cache_size)})` : "strict"),
  );
}

function table(page) {
  const heads = ["Name", "Kind", "Status", "Remaining", "Rate 1 h", "Rate 24 h", "Exhausts", "Days left", "Alerts", "Cache"];
  return el(
    "table",
    { class: "sequences" },
    el("caption", { class: "visually-hidden" }, "Sequences"),
    el("thead", {}, el("tr", {}, heads.map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, page.sequences.map(row)),
  );
}

// How old a reading is, once that is a minute or more: seqvend keeps one and renews it in the
// background, so a page may show figures a few minutes old (a sequence changed since, e.g. by
// adding a range, is always shown as it is now).
function age(iso) {
  const minutes = Math.floor((Date.now() - Date.parse(iso)) / 60_000);
  return minutes >= 1 ? ` (${plural(minutes, "minute", "minutes")} ago)` : "";
}

function pager(page, state, go) {
  const first = page.total ? state.offset + 1 : 0;
  const last = state.offset + page.sequences.length;
  return el(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    el("button", { type: "button", class: "secondary", disabled: state.offset === 0, onclick: () => go(Math.max(0, state.offset - PAGE)) }, "Previous"),
    el("span", { id: "shown" }, `${count(first)}–${count(last)} of ${count(page.total)}`),
    el("button", { type: "button", class: "secondary", disabled: last >= page.total, onclick: () => go(state.offset + PAGE) }, "Next"),
  );
}

export async function overview(main, ctx, params) {
  const state = readState(params);
  const filter = el("input", { id: "filter", type: "search", value: state.q, autocomplete: "off", placeholder: "e.g. ups, fedex-ground, acme" });
  const sort = el("select", { id: "sort" }, SORTS.map(([key, label]) => el("option", { value: key, selected: key === state.sort }, label)));
  const results = el("div", { id: "results", "aria-busy": "true" }, el("p", { class: "loading" }, "Loading sequences…"));
  clear(main).append(
    el("h1", { tabindex: "-1" }, "Sequences"),
    el("form", { class: "toolbar", role: "search", onsubmit: (e) => e.preventDefault() },
      el("div", { class: "field" }, el("label", { for: "filter" }, "Filter by name, namespace or carrier"), filter),
      el("div", { class: "field" }, el("label", { for: "sort" }, "Sort by"), sort)),
    results,
  );
  let asked = 0;
  const load = async () => {
    const mine = ++asked;
    writeState(state);
    results.setAttribute("aria-busy", "true");
    const query = `sort=${state.sort}&offset=${state.offset}&limit=${PAGE}${state.q ? `&q=${enc(state.q)}` : ""}`;
    try {
      const page = await get(`overview?${query}`);
      if (mine !== asked) return;
      const go = (offset) => { state.offset = offset; load(); };
      results.replaceChildren(
        page.sequences.length ? table(page) : el("p", {}, state.q ? "No sequence matches the filter." : "No sequences yet."),
        pager(page, state, go),
        el("p", { id: "as-of", class: "muted" }, "Figures as of ", when(page.as_of), age(page.as_of), "."),
      );
      sizeBars(results);
      say(`${count(page.total)} sequences${state.q ? " match" : ""}.`);
      performance.mark("overview-interactive");
    } catch (error) {
      if (mine === asked) results.replaceChildren(errorBox(error));
    } finally {
      if (mine === asked) results.setAttribute("aria-busy", "false");
    }
  };
  let typing;
  filter.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.q = filter.value.trim(); state.offset = 0; load(); }, 200);
  });
  sort.addEventListener("change", () => { state.sort = sort.value; state.offset = 0; load(); });
  await load();
}
