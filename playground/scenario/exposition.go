package scenario

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// metricSample is one line of a Prometheus text exposition: a series of the metric name,
// told apart by its labels, and its value.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapeMetrics reads the samples of the metrics named names from url, a /metrics in the
// Prometheus text format. A status other than 200 is an error.
func (s *system) scrapeMetrics(ctx context.Context, url string, names ...string) ([]metricSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	samples, err := readMetrics(resp.Body, names...)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return samples, nil
}

// readMetrics returns the samples of the metrics named names in a Prometheus text exposition
// (format 0.0.4, what every BoxOffice process serves at /metrics), in the order they appear.
// Comments and the lines of other metrics are skipped unread; a line of a named metric that
// does not parse is an error naming its line. It reads what the playground charts, not the
// whole format: no exemplars, no OpenMetrics extensions.
func readMetrics(r io.Reader, names ...string) ([]metricSample, error) {
	var out []metricSample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ \t")
		if end < 0 || !slices.Contains(names, line[:end]) {
			continue
		}
		s, err := parseSample(line[:end], line[end:])
		if err != nil {
			return nil, fmt.Errorf("line %d (%.80s): %w", n, line, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseSample reads what follows a metric's name on its line: the labels, if any, then the
// value and an optional timestamp.
func parseSample(name, rest string) (metricSample, error) {
	s := metricSample{name: name, labels: map[string]string{}}
	if strings.HasPrefix(rest, "{") {
		var err error
		if rest, err = parseLabels(rest[1:], s.labels); err != nil {
			return s, err
		}
	}
	f := strings.Fields(rest)
	if len(f) == 0 || len(f) > 2 {
		return s, errors.New("want a value and at most a timestamp after the labels")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, fmt.Errorf("value %q: %w", f[0], err)
	}
	s.value = v
	return s, nil
}

// parseLabels reads label="value" pairs into labels up to the closing brace, and returns
// the text after it. Values may hold any character, escaped as the format says: \\, \" and
// \n.
func parseLabels(text string, labels map[string]string) (string, error) {
	for {
		text = strings.TrimLeft(text, " \t")
		if strings.HasPrefix(text, "}") {
			return text[1:], nil
		}
		name, after, ok := strings.Cut(text, "=")
		name = strings.TrimSpace(name)
		if !ok || !validLabelName(name) {
			return "", fmt.Errorf("want a label name and = at %.20q", text)
		}
		after = strings.TrimLeft(after, " \t")
		if !strings.HasPrefix(after, `"`) {
			return "", fmt.Errorf("label %s: want a quoted value", name)
		}
		var v strings.Builder
		i := 1
		for ; i < len(after) && after[i] != '"'; i++ {
			c := after[i]
			if c == '\\' && i+1 < len(after) {
				i++
				switch after[i] {
				case 'n':
					c = '\n'
				default: // \\ and \"
					c = after[i]
				}
			}
			v.WriteByte(c)
		}
		if i >= len(after) {
			return "", fmt.Errorf("label %s: the value has no closing quote", name)
		}
		labels[name] = v.String()
		text = strings.TrimLeft(after[i+1:], " \t")
		switch {
		case strings.HasPrefix(text, ","):
			text = text[1:]
		case !strings.HasPrefix(text, "}"):
			return "", fmt.Errorf("label %s: want , or } after its value", name)
		}
	}
}

func validLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
