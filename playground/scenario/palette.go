package scenario

// Palette is the colour of every series the playground's page and the HTML report draw, by
// name, so a 429 is the same orange in both. The values are the Okabe–Ito palette, safe for
// the common colour blindnesses; colour never carries meaning alone (every series is also
// named). The page reads them from GET /api/scenarios, as it reads DecisionPaths.
var Palette = map[string]string{
	// Outcomes of attempts.
	"ok":          "#009e73", // 2xx
	"too_many":    "#e69f00", // 429
	"unavailable": "#d55e00", // 503
	"server":      "#cc79a7", // other 5xx
	"refused":     "#f0e442", // other 4xx: the refusals a scenario expects (409, 422…)
	"failed":      "#56b4e9", // timeouts, transport errors, dropped arrivals
	// Lines.
	"blue":  "#0072b2",
	"ink":   "#1d2330",
	"muted": "#8a93a3",
}

// SeriesCycle is the order colours are given to series that are not outcomes: a scenario's
// own counters, latency percentiles.
var SeriesCycle = []string{"#0072b2", "#d55e00", "#009e73", "#e69f00", "#cc79a7", "#56b4e9", "#1d2330", "#8a93a3"}
