// (a) Constant arrival: 5,000 vends/s for 60 s on one sequence. p99 under 10 ms, no failures.
import http from 'k6/http';
import { check } from 'k6';
import { vend, noop, STRICT, K6_OPTIONS } from './lib.js';

export const options = Object.assign({}, K6_OPTIONS, {
  scenarios: {
    constant: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE || 5000),
      timeUnit: '1s',
      duration: __ENV.DURATION || '60s',
      preAllocatedVUs: 200,
      maxVUs: 1000,
    },
  },
  thresholds: Object.assign({ http_req_duration: ['p(99)<10'] }, STRICT),
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
});

// TARGET=noop sends the same load to GET /healthz: the baseline for this machine and k6.
// TARGET=floor sends it to POST /floor of the floor server at FLOOR_URL (examples/floor.rs).
export default function () {
  if (__ENV.TARGET === 'noop') noop();
  else if (__ENV.TARGET === 'floor') floor();
  else vend('bench');
}

function floor() {
  const res = http.post(`${__ENV.FLOOR_URL}/floor`, null, { responseType: 'none' });
  check(res, { 'floor is 200': (r) => r.status === 200 });
}
