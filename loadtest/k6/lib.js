// Shared by the k6 scripts: where seqvend is, how to call it, and a check on every response.
import http from 'k6/http';
import { check } from 'k6';

export const BASE = __ENV.SEQVEND_URL || 'http://127.0.0.1:8080';
const TOKEN = __ENV.SEQVEND_TOKEN || '';
export const PARAMS = { headers: { Authorization: `Bearer ${TOKEN}` } };

// Every request is checked: a wrong status or body counts as a failed check, and every
// script's thresholds demand that all checks pass.
export function vend(name, count, tags) {
  const query = count ? `?count=${count}` : '';
  const res = http.post(`${BASE}/sequences/${name}/next${query}`, null, Object.assign({ tags }, PARAMS));
  check(res, {
    'vend is 200': (r) => r.status === 200,
    'vend carries its values': (r) =>
      r.status === 200 && (count ? r.json('values').length === count : Number.isInteger(r.json('value'))),
  });
  return res;
}

export function read(name) {
  const res = http.get(`${BASE}/sequences/${name}`, PARAMS);
  check(res, { 'read is 200': (r) => r.status === 200 && r.json('name') === name });
  return res;
}

export const STRICT = {
  checks: ['rate==1'],
  http_req_failed: ['rate==0'],
};
