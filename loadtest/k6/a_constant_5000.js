// (a) Constant arrival: 5,000 vends/s for 60 s on one sequence. p99 under 10 ms, no failures.
import { vend, STRICT } from './lib.js';

export const options = {
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
};

export default function () {
  vend('bench');
}
