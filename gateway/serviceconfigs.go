package gateway

import (
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/upstream"
)

// serviceConfigs turns a snapshot's services into the upstream layer's, with the
// UPSTREAM_<NAME> instances in place of the policy's where set.
func serviceConfigs(snap *policy.Snapshot, overrides map[string][]string) []upstream.ServiceConfig {
	var out []upstream.ServiceConfig
	for _, sv := range snap.Policy.Services {
		c := upstream.ServiceConfig{
			Name: sv.Name, Instances: sv.Instances, DNS: sv.DNS, DNSInterval: sv.DNSInterval.D(),
			MaxInFlight: sv.MaxInFlight, EjectAfter: sv.EjectAfter,
			RetryBudget: upstream.RetryBudget{Ratio: sv.RetryBudget.Ratio, MinPerSecond: sv.RetryBudget.MinPerSecond,
				Window: sv.RetryBudget.Window.D(), Unlimited: sv.RetryBudget.Unlimited},
			Probe: upstream.ProbeConfig{Path: sv.Probe.Path, Interval: sv.Probe.Interval.D(), Timeout: sv.Probe.Timeout.D(),
				HealthyAfter: sv.Probe.HealthyAfter, UnhealthyAfter: sv.Probe.UnhealthyAfter},
		}
		if a := sv.AdaptiveConcurrency; a != nil {
			c.Adaptive = upstream.AdaptiveConcurrency{LatencyTarget: a.LatencyTarget.D(), MinInFlight: a.MinInFlight}
		}
		if t := sv.PanicThreshold; t != nil {
			c.PanicThreshold = *t
			if *t == 0 {
				c.PanicThreshold = -1 // off: the upstream layer reads 0 as its default
			}
		}
		if v, ok := overrides[sv.Name]; ok {
			c.Instances, c.DNS = v, ""
		}
		out = append(out, c)
	}
	return out
}
