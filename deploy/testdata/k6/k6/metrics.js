// A stand-in for k6/metrics: metrics that record nothing.
class Metric {
  add() {}
}
export class Counter extends Metric {}
export class Gauge extends Metric {}
export class Rate extends Metric {}
export class Trend extends Metric {}
