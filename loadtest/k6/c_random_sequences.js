// (c) 10,000 sequences chosen uniformly at random, at a constant arrival rate.
import { vend, STRICT, K6_OPTIONS } from './lib.js';

const SEQUENCES = Number(__ENV.SEQUENCES || 10000);

export const options = Object.assign({}, K6_OPTIONS, {
  scenarios: {
    random: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE || 5000),
      timeUnit: '1s',
      duration: __ENV.DURATION || '30s',
      preAllocatedVUs: 200,
      maxVUs: 1000,
    },
  },
  thresholds: Object.assign({ http_req_duration: ['p(99)<10'] }, STRICT),
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
});

export default function () {
  const n = Math.floor(Math.random() * SEQUENCES);
  vend(`r${String(n).padStart(5, '0')}`);
}
