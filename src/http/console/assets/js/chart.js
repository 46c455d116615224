// The usage chart: values used over time from the samples seqvend keeps, and the forecast
// line at the last day's rate up to the point the ranges run out. SVG built by DOM calls.

import { el, svg } from "./dom.js";
import { count, rate } from "./format.js";

const W = 640;
const H = 220;
const PAD = { left: 64, right: 12, top: 12, bottom: 28 };

const tick = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

// Where the forecast line ends: at exhaustion if that comes within as long again as the
// history shown, else at that horizon (a line a century long would flatten the history).
function forecastEnd(history, sequence) {
  const now = Date.now();
  const span = Math.max(now - history[0].at, 3600_000);
  const horizon = now + span;
  const last = history[history.length - 1];
  const perMs = (sequence.usage.per_second_24h || 0) / 1000;
  const exhausts = sequence.usage.exhausts_at ? Date.parse(sequence.usage.exhausts_at) : null;
  const at = exhausts && exhausts <= horizon ? exhausts : horizon;
  return { at, used: last.used + perMs * (at - now), runsOut: exhausts !== null && exhausts <= horizon, capacity: last.used + sequence.remaining };
}

export function usageChart(samples, sequence) {
  const history = samples.map((s) => ({ at: Date.parse(s.at), used: Number(s.used) }));
  if (history.length < 2) {
    return el("p", { class: "muted" }, "Not enough samples yet: seqvend samples usage every few seconds; come back in a minute.");
  }
  const now = { at: Date.now(), used: history[history.length - 1].used };
  const end = forecastEnd(history, sequence);
  const x0 = history[0].at;
  const x1 = Math.max(end.at, now.at);
  const y0 = Math.min(...history.map((p) => p.used));
  const y1 = Math.max(end.used, now.used, y0 + 1);
  const x = (t) => PAD.left + ((t - x0) / (x1 - x0 || 1)) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - ((v - y0) / (y1 - y0)) * (H - PAD.top - PAD.bottom);
  const path = (points) => points.map((p, i) => `${i ? "L" : "M"}${x(p.at).toFixed(1)},${y(p.used).toFixed(1)}`).join(" ");
  const summary = `Used ${count(now.used - history[0].used)} values since ${tick.format(new Date(x0))}; at ${rate(sequence.usage.per_second_24h)} ` +
    (end.runsOut ? `the ranges run out on ${tick.format(new Date(end.at))}.` : "they do not run out within the period shown.");
  return el(
    "figure",
    { class: "chart" },
    svg(
      "svg",
      { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary },
      svg("line", { class: "axis", x1: PAD.left, y1: H - PAD.bottom, x2: W - PAD.right, y2: H - PAD.bottom }),
      svg("line", { class: "axis", x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: H - PAD.bottom }),
      svg("text", { x: PAD.left - 6, y: y(y1) + 4, "text-anchor": "end" }, count(y1)),
      svg("text", { x: PAD.left - 6, y: y(y0), "text-anchor": "end" }, count(y0)),
      svg("text", { x: PAD.left, y: H - 8 }, tick.format(new Date(x0))),
      svg("text", { x: W - PAD.right, y: H - 8, "text-anchor": "end" }, tick.format(new Date(x1))),
      svg("line", { class: "now", x1: x(now.at), y1: PAD.top, x2: x(now.at), y2: H - PAD.bottom }),
      end.runsOut && svg("line", { class: "capacity", x1: PAD.left, y1: y(end.capacity), x2: W - PAD.right, y2: y(end.capacity) }),
      svg("path", { class: "used", d: path([...history, now]) }),
      svg("path", { class: "forecast", d: path([now, end]) }),
    ),
    el("figcaption", {}, summary, " ",
      el("span", { class: "legend used" }, "— used"), " ",
      el("span", { class: "legend forecast" }, "- - forecast"),
      end.runsOut ? el("span", { class: "legend capacity" }, " ··· runs out") : ""),
  );
}
