// What a run did, for run.mjs to report: every request with its answer, every check, every
// custom metric's samples. The scenario and iteration the runner is in tag each record, as k6
// tags its samples.
export const record = {
  scenario: '',
  requests: [],
  checks: {},
  metrics: {},
};
