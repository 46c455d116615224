// How numbers, rates and times read: in the viewer's locale and time zone, with UTC on hover.

import { el } from "./dom.js";

const whole = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const short = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const local = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export const count = (n) => (n === null || n === undefined ? "—" : whole.format(n));

export function rate(perSecond) {
  if (!perSecond) return "idle";
  if (perSecond >= 1) return `${short.format(perSecond)}/s`;
  if (perSecond * 3600 >= 1) return `${short.format(perSecond * 3600)}/h`;
  return `${short.format(perSecond * 86400)}/day`;
}

export function daysLeft(days) {
  if (days === null || days === undefined) return "never at this rate";
  if (days < 1) return `${short.format(days * 24)} hours`;
  return `${whole.format(days)} days`;
}

// A <time> in the viewer's zone, its UTC instant on hover and in `datetime`.
export function when(iso) {
  if (!iso) return el("span", {}, "—");
  const at = new Date(iso);
  return el("time", { datetime: at.toISOString(), title: `${at.toISOString()} (UTC)` }, local.format(at));
}

export const plural = (n, one, many) => `${count(n)} ${n === 1 ? one : many}`;
