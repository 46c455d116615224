// (g) A fixed rate of single vends on one sequence, for loadtest/db_load.sh: RATE requests/s
// for DURATION on SEQUENCE. Only the rate matters here (the database's work per value is what
// is measured), so there are no latency thresholds; every response must still be a 200.
import { vend, K6_OPTIONS } from './lib.js';

export const options = Object.assign({}, K6_OPTIONS, {
  scenarios: {
    fixed: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE || 1000),
      timeUnit: '1s',
      duration: __ENV.DURATION || '20s',
      preAllocatedVUs: 50,
      maxVUs: 400,
    },
  },
  thresholds: { checks: ['rate==1'] },
});

export default function () {
  vend(__ENV.SEQUENCE);
}
