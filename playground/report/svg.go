package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// chart is one time-series chart: a line per series, or stacked areas, over shaded phases.
type chart struct {
	Title string
	Unit  string
	// RightUnit names the right-hand scale, which the lines marked Right are drawn against
	// (a queue a hundred times the capacity beside it); empty when there is none.
	RightUnit string
	Stacked   bool
	Bands     []band
	Lines     []line
	// Help says what a series means, by label, listed under the legend in the lines' order.
	Help map[string]string
}

type line struct {
	Label  string
	Color  string
	Values []float64 // one per second; NaN is a gap (nothing to draw that second)
	// Dashed draws a limit rather than a measure (a capacity); Right draws the line against
	// the chart's right-hand scale.
	Dashed, Right bool
}

// The drawing area, in SVG user units; the SVG scales to the page's width.
const (
	width, height        = 1000.0, 260.0
	left, right, plotTop = 56.0, 56.0, 12.0
	bottom               = 28.0
	plotW, plotH         = width - left - right, height - plotTop - bottom
	gridLines            = 5 // a scale topped by 1, 2 or 5 × 10ⁿ then ticks at round values
	tickSize             = 11
)

// svg renders the chart as an inline <figure>.
func (c chart) svg() template.HTML {
	n := 0
	for _, l := range c.Lines {
		n = max(n, len(l.Values))
	}
	// The top of each scale: the highest point drawn against it (stacked: the highest sum).
	peak, peakRight := 0.0, 0.0
	for i := range n {
		sum := 0.0
		for _, l := range c.Lines {
			v := at(l.Values, i)
			switch {
			case c.Stacked:
				sum += v
			case l.Right:
				peakRight = math.Max(peakRight, v)
			default:
				peak = math.Max(peak, v)
			}
		}
		peak = math.Max(peak, sum)
	}
	ymax, ymaxRight := niceCeil(peak), niceCeil(peakRight)
	x := func(i float64) float64 {
		if n <= 1 {
			return left
		}
		return left + plotW*i/float64(n-1)
	}
	scaled := func(v, top float64) float64 { return plotTop + plotH*(1-v/top) }
	y := func(v float64) float64 { return scaled(v, ymax) }

	var b strings.Builder
	caption := c.Title
	if c.Unit != "" {
		caption += " (" + c.Unit + ")"
	}
	fmt.Fprintf(&b, `<figure><figcaption>%s</figcaption><svg viewBox="0 0 %g %g" width="100%%" role="img" aria-label="%s" font-family="system-ui,sans-serif">`,
		template.HTMLEscapeString(caption), width, height, template.HTMLEscapeString(caption))
	// Phases: alternate shading, each named at its top left.
	for i, bd := range c.Bands {
		// A phase reaches the next one's first second, so the shading has no gaps.
		x0, x1 := x(float64(bd.From)), x(float64(min(bd.To, n-1)))
		if x1 <= x0 {
			x1 = x0 + plotW/math.Max(float64(n), 1)
		}
		if i%2 == 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%g" width="%.1f" height="%g" fill="#f2f4f7"/>`, x0, plotTop, x1-x0, plotH)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" font-size="%d" fill="#777">%s</text>`, x0+3, plotTop+tickSize, tickSize, template.HTMLEscapeString(bd.Name))
	}
	// Grid and the value scale.
	for g := 0; g <= gridLines; g++ {
		v := ymax * float64(g) / gridLines
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/>`, left, left+plotW, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" font-size="%d" text-anchor="end" fill="#555">%s</text>`, left-6, y(v)+4, tickSize, tick(v))
		if c.RightUnit != "" {
			fmt.Fprintf(&b, `<text x="%g" y="%.1f" font-size="%d" fill="#555">%s</text>`, left+plotW+6, y(v)+4, tickSize, tick(ymaxRight*float64(g)/gridLines))
		}
	}
	if c.RightUnit != "" {
		// Named along the right edge, clear of the seconds along the bottom.
		fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="%d" text-anchor="middle" fill="#555" transform="rotate(90 %g %g)">%s</text>`,
			width-4, plotTop+plotH/2, tickSize, width-4, plotTop+plotH/2, template.HTMLEscapeString(c.RightUnit))
	}
	// Seconds along the bottom: about ten ticks, at round steps (1, 2, 5, 10… s).
	step := int(niceCeil(float64(n) / 10))
	for i := 0; i < n; i += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" font-size="%d" text-anchor="middle" fill="#555">%ds</text>`, x(float64(i)), height-8, tickSize, i)
	}
	// The series.
	base := make([]float64, n)
	for _, l := range c.Lines {
		if c.Stacked {
			var pts []string
			for i := range n {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(i)), y(base[i]+at(l.Values, i))))
			}
			for i := n - 1; i >= 0; i-- {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(i)), y(base[i])))
			}
			fmt.Fprintf(&b, `<polygon points="%s" fill="%s" fill-opacity="0.75"><title>%s</title></polygon>`, strings.Join(pts, " "), l.Color, template.HTMLEscapeString(l.Label))
			for i := range n {
				base[i] += at(l.Values, i)
			}
			continue
		}
		ly := y
		if l.Right {
			ly = func(v float64) float64 { return scaled(v, ymaxRight) }
		}
		dash := ""
		if l.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		// One polyline per run of seconds with a value: a NaN breaks the line.
		for _, run := range runs(l.Values, n) {
			var pts []string
			for i := run[0]; i < run[1]; i++ {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(i)), ly(l.Values[i])))
			}
			if len(pts) == 1 { // a lone second: a short tick, so it shows
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(run[0]))+2, ly(l.Values[run[0]])))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s><title>%s</title></polyline>`, strings.Join(pts, " "), l.Color, dash, template.HTMLEscapeString(l.Label))
		}
	}
	b.WriteString(`</svg><div class="legend">`)
	for _, l := range c.Lines {
		fmt.Fprintf(&b, `<span><i style="background:%s"></i>%s</span>`, l.Color, template.HTMLEscapeString(l.Label))
	}
	b.WriteString(`</div>`)
	var help strings.Builder
	for _, l := range c.Lines {
		if h := c.Help[l.Label]; h != "" {
			fmt.Fprintf(&help, `<dt>%s</dt><dd>%s</dd>`, template.HTMLEscapeString(l.Label), template.HTMLEscapeString(h))
		}
	}
	if help.Len() > 0 {
		fmt.Fprintf(&b, `<dl class="help">%s</dl>`, help.String())
	}
	b.WriteString(`</figure>`)
	return template.HTML(b.String())
}

// at is the series' value at second i; 0 past its end and for a gap (NaN), so the scales and
// stacks ignore gaps.
func at(v []float64, i int) float64 {
	if i < len(v) && !math.IsNaN(v[i]) {
		return v[i]
	}
	return 0
}

// runs are the [from, to) stretches of the first n seconds of v that have a value.
func runs(v []float64, n int) [][2]int {
	var out [][2]int
	for i := 0; i < min(n, len(v)); i++ {
		if math.IsNaN(v[i]) {
			continue
		}
		if len(out) > 0 && out[len(out)-1][1] == i {
			out[len(out)-1][1] = i + 1
		} else {
			out = append(out, [2]int{i, i + 1})
		}
	}
	return out
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so the scale's ticks read well;
// at least 1.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// tick writes a scale's value in full ("12.5", not "12"), without trailing zeros.
func tick(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}
