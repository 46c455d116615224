// (b) Ramping arrival in steps, to find the highest rate whose p99 stays under 10 ms. Each
// request is tagged with the step it was sent in; the runner reads each step's p99.
import exec from 'k6/execution';
import { vend, noop, STRICT, K6_OPTIONS } from './lib.js';

const STEPS = (__ENV.STEPS || '2000,4000,6000,8000,10000,12000,14000').split(',').map(Number);
const HOLD = Number(__ENV.HOLD_S || 10);
const RAMP = 2;

const stages = [];
STEPS.forEach((rate) => {
  stages.push({ target: rate, duration: `${RAMP}s` }, { target: rate, duration: `${HOLD}s` });
});

const thresholds = Object.assign({}, STRICT);
STEPS.forEach((rate) => {
  // Present in the summary for every step; only reported, never failing the run.
  thresholds[`http_req_duration{step:${rate}}`] = ['p(99)<1000000'];
});

export const options = Object.assign({}, K6_OPTIONS, {
  scenarios: {
    ramp: {
      executor: 'ramping-arrival-rate',
      startRate: STEPS[0] / 2,
      timeUnit: '1s',
      stages,
      // Enough VUs up front: creating VUs mid-run costs k6 CPU on a machine it shares.
      preAllocatedVUs: 800,
      maxVUs: 2000,
    },
  },
  thresholds,
  summaryTrendStats: ['avg', 'med', 'p(99)', 'max'],
});

// The step whose hold period this moment falls in ("ramp" while ramping).
function currentStep() {
  const elapsed = (Date.now() - exec.scenario.startTime) / 1000;
  const period = RAMP + HOLD;
  const index = Math.floor(elapsed / period);
  if (index >= STEPS.length || elapsed - index * period < RAMP) return 'ramp';
  return String(STEPS[index]);
}

// TARGET=noop sends the same load to GET /healthz: the baseline for this machine and k6.
export default function () {
  const tags = { step: currentStep() };
  if (__ENV.TARGET === 'noop') noop(tags);
  else vend('bench', 0, tags);
}
