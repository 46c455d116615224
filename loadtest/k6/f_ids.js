// (f) Time-ordered ids over HTTP: constant arrival on POST /ids/snowflake and POST /ids/uuidv7
// (COUNT ids a request, default 100), half each, for DURATION. No failures; p99 under 10 ms.
// Bodies are checked on a sample: the ids are as many as asked for, and ascending.
//   SEQVEND_URL=http://127.0.0.1:8080 SEQVEND_TOKEN=<vend token> k6 run loadtest/k6/f_ids.js
//   RATE=2000 COUNT=1000 DURATION=30s …                   # other loads
import http from 'k6/http';
import { check } from 'k6';
import { BASE, PARAMS, K6_OPTIONS, STRICT } from './lib.js';

const COUNT = Number(__ENV.COUNT || 100);
const BODY_SAMPLE = Number(__ENV.BODY_SAMPLE || 50);

export const options = Object.assign({}, K6_OPTIONS, {
  scenarios: {
    ids: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE || 2000),
      timeUnit: '1s',
      duration: __ENV.DURATION || '30s',
      preAllocatedVUs: 100,
      maxVUs: 500,
    },
  },
  thresholds: Object.assign({ http_req_duration: ['p(99)<10'] }, STRICT),
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
});

function ascending(ids) {
  for (let i = 1; i < ids.length; i++) if (!(ids[i - 1] < ids[i])) return false;
  return true;
}

export default function () {
  const kind = Math.random() < 0.5 ? 'snowflake' : 'uuidv7';
  const withBody = Math.random() * BODY_SAMPLE < 1;
  const params = Object.assign({ tags: { kind }, responseType: withBody ? 'text' : 'none' }, PARAMS);
  const res = http.post(`${BASE}/ids/${kind}?count=${COUNT}`, null, params);
  check(res, { [`${kind} is 200`]: (r) => r.status === 200 });
  if (withBody) {
    // Snowflake ids are compared as strings of equal length (JSON numbers lose digits in JS).
    const ids = res.status === 200 ? res.json(kind === 'snowflake' ? 'ids_str' : 'ids') : [];
    check(res, {
      [`${kind} carries ${COUNT} ascending ids`]: () => ids.length === COUNT && ascending(ids),
    });
  }
}
