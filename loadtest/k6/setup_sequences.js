// Creates the load-test sequences through the API: r00000..r09999 (for script c).
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import { BASE } from './lib.js';

const SEQUENCES = Number(__ENV.SEQUENCES || 10000);
const ADMIN = { headers: { Authorization: `Bearer ${__ENV.SEQVEND_ADMIN_TOKEN}`, 'Content-Type': 'application/json' } };

export const options = {
  scenarios: {
    create: { executor: 'shared-iterations', vus: 8, iterations: SEQUENCES, maxDuration: '10m' },
  },
  thresholds: { checks: ['rate==1'] },
};

export default function () {
  const i = exec.scenario.iterationInTest;
  const name = `r${String(i).padStart(5, '0')}`;
  const body = JSON.stringify({ name, min: i * 1000000000 + 1, max: (i + 1) * 1000000000 });
  const res = http.post(`${BASE}/sequences`, body, ADMIN);
  check(res, { 'created (or already there)': (r) => r.status === 201 || r.status === 409 });
}
