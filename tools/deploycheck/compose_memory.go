package deploycheck

import (
	"fmt"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

// ComposeMemory returns the sum of the memory limits of the services that start by default
// (no profile), counting replicas, and the limit of each service.
func ComposeMemory(p *types.Project) (total int64, limits map[string]int64) {
	limits = map[string]int64{}
	for _, name := range serviceNames(p) {
		svc := p.Services[name]
		limit := int64(svc.MemLimit)
		if svc.Deploy != nil && svc.Deploy.Resources.Limits != nil && svc.Deploy.Resources.Limits.MemoryBytes > 0 {
			limit = int64(svc.Deploy.Resources.Limits.MemoryBytes)
		}
		limits[name] = limit
		if len(svc.Profiles) > 0 {
			continue
		}
		n := 1
		if svc.Deploy != nil && svc.Deploy.Replicas != nil {
			n = *svc.Deploy.Replicas
		}
		total += limit * int64(n)
	}
	return total, limits
}

// checkComposeMemory: every service has a memory limit, a Go process's GOMEMLIMIT (when
// set) is below it, and the default stack's sum is within MemoryBudget.
func checkComposeMemory(gs []goService, p *types.Project) []error {
	total, limits := ComposeMemory(p)
	var errs []error
	for _, name := range sortedKeys(limits) {
		if limits[name] == 0 {
			errs = append(errs, fmt.Errorf("service %s: no memory limit (deploy.resources.limits.memory)", name))
		}
	}
	for _, name := range serviceNames(p) {
		v := p.Services[name].Environment["GOMEMLIMIT"]
		if v == nil || limits[name] == 0 {
			continue
		}
		soft, err := parseGoMemLimit(*v)
		if err != nil {
			errs = append(errs, fmt.Errorf("service %s: GOMEMLIMIT: %w", name, err))
		} else if soft >= limits[name] {
			errs = append(errs, fmt.Errorf("service %s: GOMEMLIMIT=%s is not below its memory limit of %d MiB", name, *v, limits[name]>>20))
		}
	}
	if total > MemoryBudget {
		errs = append(errs, fmt.Errorf("memory limits add up to %d MiB, above the budget of %d MiB", total>>20, MemoryBudget>>20))
	}
	return errs
}

// parseGoMemLimit reads the Go runtime's GOMEMLIMIT syntax: a number with an optional
// B, KiB, MiB, GiB or TiB suffix.
func parseGoMemLimit(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			var v int64
			if _, err := fmt.Sscanf(n, "%d", &v); err != nil || fmt.Sprint(v) != n {
				return 0, fmt.Errorf("%q: want a number and a unit such as 40MiB", s)
			}
			return v << u.shift, nil
		}
	}
	var v int64
	if _, err := fmt.Sscanf(s, "%d", &v); err != nil || fmt.Sprint(v) != s {
		return 0, fmt.Errorf("%q: want a number and a unit such as 40MiB", s)
	}
	return v, nil
}
