// The shim of k6/metrics: each metric counts its samples and sums their values, by scenario.
import { record } from './record.js';

class Metric {
  constructor(name) {
    this.name = name;
  }

  add(value) {
    const key = `${this.name}{scenario:${record.scenario}}`;
    const m = (record.metrics[key] ??= { count: 0, sum: 0 });
    m.count++;
    m.sum += Number(value);
  }
}

export class Counter extends Metric {}
export class Gauge extends Metric {}
export class Rate extends Metric {}
export class Trend extends Metric {}
