// (d) Batches: closed loop, COUNT values per request (100 or 1000). The runner turns
// iterations into values per second.
import { vend, STRICT, K6_OPTIONS } from './lib.js';

const COUNT = Number(__ENV.COUNT || 100);

export const options = Object.assign({}, K6_OPTIONS, {
  scenarios: {
    batches: { executor: 'constant-vus', vus: Number(__ENV.VUS || 32), duration: __ENV.DURATION || '20s' },
  },
  thresholds: STRICT,
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
});

export default function () {
  vend(__ENV.SEQUENCE || 'batch', COUNT);
}
