// Shared by the k6 scripts: where seqvend is, how to call it, and a check on every response.
import http from 'k6/http';
import { check } from 'k6';

export const BASE = __ENV.SEQVEND_URL || 'http://127.0.0.1:8080';
const TOKEN = __ENV.SEQVEND_TOKEN || '';
export const PARAMS = { headers: { Authorization: `Bearer ${TOKEN}` } };

// Scripts discard response bodies (parsing every body would make k6, which shares the
// machine's two cores with seqvend and PostgreSQL, the bottleneck). Every response's status
// is checked; one request in BODY_SAMPLE also has its body read and checked.
const BODY_SAMPLE = Number(__ENV.BODY_SAMPLE || 50);

export const K6_OPTIONS = { discardResponseBodies: true };

function sampled() {
  return Math.random() * BODY_SAMPLE < 1;
}

// A wrong status or body counts as a failed check, and every script's thresholds demand
// that all checks pass.
export function vend(name, count, tags) {
  const query = count ? `?count=${count}` : '';
  const withBody = sampled();
  const params = Object.assign({ tags, responseType: withBody ? 'text' : 'none' }, PARAMS);
  const res = http.post(`${BASE}/sequences/${name}/next${query}`, null, params);
  check(res, { 'vend is 200': (r) => r.status === 200 });
  if (withBody) {
    check(res, {
      'vend carries its values': (r) =>
        r.status === 200 && (count ? r.json('values').length === count : Number.isInteger(r.json('value'))),
    });
  }
  return res;
}

export function read(name) {
  const withBody = sampled();
  const res = http.get(`${BASE}/sequences/${name}`, Object.assign({ responseType: withBody ? 'text' : 'none' }, PARAMS));
  check(res, { 'read is 200': (r) => r.status === 200 });
  if (withBody) {
    check(res, { 'read names the sequence': (r) => r.json('name') === name });
  }
  return res;
}

// The same request load on the no-op route: the baseline measured beside each script.
export function noop(tags) {
  const res = http.get(`${BASE}/healthz`, { tags });
  check(res, { 'healthz is 200': (r) => r.status === 200 });
  return res;
}

export const STRICT = {
  checks: ['rate==1'],
  http_req_failed: ['rate==0'],
};
