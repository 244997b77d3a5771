// The shim of k6/execution: where the runner is, as VU 1 alone in each scenario.
import { record } from './record.js';

const iteration = { get: () => globalThis.__ITER };
const vu = { get: () => globalThis.__VU };

export default {
  scenario: Object.defineProperties({}, {
    name: { get: () => record.scenario },
    iterationInTest: iteration,
    iterationInInstance: iteration,
  }),
  vu: Object.defineProperties({}, {
    idInTest: vu,
    idInInstance: vu,
    iterationInScenario: iteration,
  }),
};
