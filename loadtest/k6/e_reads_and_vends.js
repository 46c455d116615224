// (e) Reads (GET /sequences/{name}) mixed with vends: one read for every four vends.
import { vend, read, STRICT, K6_OPTIONS } from './lib.js';

export const options = Object.assign({}, K6_OPTIONS, {
  scenarios: {
    mixed: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE || 3000),
      timeUnit: '1s',
      duration: __ENV.DURATION || '30s',
      preAllocatedVUs: 200,
      maxVUs: 1000,
    },
  },
  thresholds: Object.assign({ http_req_duration: ['p(99)<25'] }, STRICT),
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
});

export default function () {
  if (Math.random() < 0.2) {
    read('bench');
  } else {
    vend('bench');
  }
}
