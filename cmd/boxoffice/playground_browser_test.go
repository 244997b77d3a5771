package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"boxoffice.dev/platform/testkit"
)

// TestPlaygroundInBrowser is the playground as a student meets it: the whole system runs
// in-process (`boxoffice up`), a real headless Chromium opens the playground, starts
// rate-limiter, sees the charts receive data, reads that the limit's rate does nothing while
// the limit is off, turns the limit on with the page's own knob (in view beside a chart) and
// sees the 429 counter rise; a screenshot of the page must not be blank. Then it starts each
// other scenario, turns one of its knobs with a chart in view and sees the knob take effect:
// retry-storm says which knobs are inert and which a later phase sets again, flash-sale
// counts its expected refusals (409, 422) apart from timeouts and errors, store-outage takes
// a new limit.
func TestPlaygroundInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	if testing.Short() {
		t.Skip("starts the whole system and a browser")
	}
	ep := startUp(t)

	tab := openTab(t, browser)
	ctx, problems, do, value := tab.ctx, tab.problems, tab.do, tab.value
	number := func(id string) int {
		t.Helper()
		s := strings.ReplaceAll(value(`document.getElementById("`+id+`").textContent`), ",", "")
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("#%s = %q, want a number", id, s)
		}
		return n
	}
	status := func() string { return value(`document.getElementById("run-status").textContent`) }
	// eventually polls cond; the page's status line is logged as it changes, so a failure
	// shows where the run stood.
	lastStatus := ""
	eventually := func(within time.Duration, what string, cond func() bool) {
		t.Helper()
		testkit.Eventually(t, within, what, func() bool {
			if s := status(); s != lastStatus {
				t.Logf("page: %s", s)
				lastStatus = s
			}
			return cond()
		})
	}

	// inView scrolls the chart into the middle of the window and requires it and the knob
	// (its whole control) in the viewport at once: the knob panel stays beside the charts.
	inView := func(chart, knob string) {
		t.Helper()
		got := value(fmt.Sprintf(`(() => {
			const chart = document.getElementById(%q), knob = document.getElementById(%q);
			if (!chart || !knob) return "missing";
			chart.scrollIntoView({block: "center"});
			knob.scrollIntoView({block: "nearest"});
			const inside = (r) => r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth;
			const c = chart.getBoundingClientRect(), k = knob.getBoundingClientRect();
			const seen = c.bottom > 0 && c.top < innerHeight;
			return seen && inside(k) ? "both" : "chart " + c.top + ".." + c.bottom + ", knob " + k.top + ".." + k.bottom + " of " + innerHeight;
		})()`, chart, knob))
		if got != "both" {
			t.Errorf("#%s and #%s in the viewport at once: %s, want both", chart, knob, got)
		}
	}
	// note is the text of the note under a knob ("" while hidden).
	note := func(knob string) string {
		return value(`(() => { const n = document.getElementById("knob-` + knob + `-note"); return n && !n.hidden ? n.textContent : ""; })()`)
	}
	// startRun picks a scenario and profile, starts it stretched to length, and waits for
	// samples; the run before it must have ended.
	startRun := func(scenario, length string, samples int) {
		t.Helper()
		do("start "+scenario,
			chromedp.SetValue(chromedp.ID("scenario"), scenario),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("scenario").dispatchEvent(new Event("change"))`),
			chromedp.SetValue(chromedp.ID("duration"), length),
			chromedp.Click(chromedp.ID("start")),
		)
		eventually(3*time.Minute, scenario+" streams samples", func() bool {
			n, _ := strconv.Atoi(value(`document.body.dataset.samples ?? "0"`))
			return n >= samples && value(`document.getElementById("run-status").dataset.state`) == "running"
		})
	}
	stopRun := func(scenario string) {
		t.Helper()
		do("stop "+scenario, chromedp.Click(chromedp.ID("stop")))
		eventually(2*time.Minute, scenario+" ends after Stop", func() bool {
			s := value(`document.getElementById("run-status").dataset.state`)
			return s == "done" || s == "failed"
		})
	}
	logShows := func(what string) {
		t.Helper()
		eventually(30*time.Second, "the event log shows "+what, func() bool {
			return strings.Contains(value(`document.getElementById("log").textContent`), what)
		})
	}

	do("open the playground",
		chromedp.Navigate(ep.Playground+"/"),
		chromedp.WaitReady(chromedp.CSS(`#scenario option[value="rate-limiter"]`)),
		chromedp.SetValue(chromedp.ID("scenario"), "rate-limiter"),
	)
	// The steady profile, stretched to five minutes: its first phase runs without the limit for
	// minutes, so every 429 after the knob is the knob's, not a later phase's.
	profile := value(`(() => { const s = document.getElementById("profile");` +
		` const p = [...s.options].find(o => o.value === "steady") ?? s.options[0]; s.value = p.value;` +
		` s.dispatchEvent(new Event("change")); return p.value; })()`)
	do("start the run",
		chromedp.SetValue(chromedp.ID("duration"), "5m"),
		chromedp.Click(chromedp.ID("start")),
	)

	eventually(90*time.Second, "the run streams samples and some requests are accepted", func() bool {
		n, _ := strconv.Atoi(value(`document.body.dataset.samples ?? "0"`))
		return n >= 3 && number("total-ok") > 0
	})
	if got := value(`document.getElementById("run-status").dataset.state`); got != "running" {
		t.Fatalf("run state = %q after samples arrived, want running (profile %s): %s", got, profile, status())
	}
	// The outcomes chart drew its 2xx band: uPlot paints it on the canvas.
	if px := chartPixels(t, value, "chart-outcomes", colour2xx); px < 200 {
		t.Errorf("outcomes chart has %d pixels of the 2xx band, want a drawn band (>= 200)", px)
	}
	// The limiter's decisions by path, read from the gateway: the store decides, its band
	// is drawn, each path is explained, and the tile gives the share made without it.
	if px := chartPixels(t, value, "chart-decisions", colourStore); px < 200 {
		t.Errorf("decisions chart has %d pixels of the store's band, want a drawn band (>= 200)", px)
	}
	if got := value(`document.querySelector('#decision-paths dt[data-path="fallback"] + dd')?.textContent ?? ""`); !strings.Contains(got, "Redis") {
		t.Errorf("the decisions chart explains fallback as %q, want a sentence about Redis", got)
	}
	if got := value(`document.getElementById("without-store").textContent`); !strings.HasSuffix(got, "%") {
		t.Errorf("tile of decisions made without the store = %q, want a share", got)
	}

	// The legends show the latest values without a cursor over the charts.
	if got := value(`document.querySelector("#chart-outcomes .u-legend .u-series:nth-child(2) .u-value")?.textContent ?? ""`); got == "" || got == "–" {
		t.Errorf("outcomes legend's 2xx value = %q with no cursor, want the latest second's", got)
	}

	// The limit's rate does nothing while the limit is off, and says so.
	if got := note("rate"); !strings.Contains(got, "Limit on is off") {
		t.Errorf("note under the rate knob with the limit off = %q, want it to say Limit on is off", got)
	}
	// Turn the limit on through the page's knobs, at a rate far below the offered load, with
	// the outcomes chart in view.
	before := number("total-too-many")
	if before != 0 {
		t.Fatalf("429s before the limit is on = %d, want 0 (the first phase of %s runs without it)", before, profile)
	}
	inView("chart-outcomes", "knob-rate-set")
	inView("chart-outcomes", "knob-limit")
	do("set the limit's rate",
		chromedp.SetValue(chromedp.ID("knob-rate"), "5"),
		chromedp.Click(chromedp.ID("knob-rate-set")),
		chromedp.Click(chromedp.ID("knob-limit")),
	)
	// The rate is in force now; the note may still say that a later phase sets it again.
	eventually(10*time.Second, "the rate's inert note goes once the limit is on", func() bool { return !strings.Contains(note("rate"), "No effect") })
	eventually(30*time.Second, "429s rise after the limit is turned on", func() bool {
		return number("total-too-many") > before+10
	})
	eventually(10*time.Second, "the event log shows the knob change", func() bool {
		return strings.Contains(value(`document.getElementById("log").textContent`), "limit")
	})
	if errText := value(`document.getElementById("run-error").textContent`); errText != "" {
		t.Errorf("the page reports an error after the knobs: %q", errText)
	}

	actx, acancel := context.WithTimeout(ctx, 30*time.Second)
	shot, err := chromedp.Run(actx, chromedp.FullScreenshot(100)) // quality 100: PNG
	acancel()
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.TempDir(), "playground.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	checkNotBlank(t, path)
	if keep := os.Getenv("PLAYGROUND_SCREENSHOT"); keep != "" { // to look at it: PLAYGROUND_SCREENSHOT=/tmp/p.png
		_ = os.WriteFile(keep, shot, 0o644)
	}

	stopRun("rate-limiter")

	// retry-storm: jitter acts only with back-off, and says so; an outage turned by hand
	// shows in the event log and as 503s, and the page warns that a later phase sets the
	// outage knob again.
	startRun("retry-storm", "5m", 2)
	if got := note("jitter"); !strings.Contains(got, "No effect now") || !strings.Contains(got, "backoff") {
		t.Errorf("note under jitter while the clients do not retry = %q, want it inert until backoff", got)
	}
	inView("chart-backend", "knob-outage")
	unavailable := number("total-unavailable")
	do("turn the outage on", chromedp.SetValue(chromedp.ID("knob-outage"), "down"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("knob-outage").dispatchEvent(new Event("change"))`))
	logShows("outage = down")
	eventually(30*time.Second, "503s rise after the outage is turned on", func() bool { return number("total-unavailable") > unavailable+10 })
	if got := note("outage"); !strings.Contains(got, "sets this to") {
		t.Errorf("note under the outage knob set by hand = %q, want the later phase that sets it again", got)
	}
	stopRun("retry-storm")

	// flash-sale: more fans by hand, and the page says the next phase turns them to 0; the
	// seat conflicts and sold-out answers are expected refusals, not timeouts.
	startRun("flash-sale", "", 2)
	if got := value(`document.getElementById("refused-name").textContent`); !strings.Contains(got, "409") || !strings.Contains(got, "422") {
		t.Errorf("refusals tile named %q, want the expected 409 and 422", got)
	}
	inView("chart-outcomes", "knob-fans_per_second-set")
	do("bring more fans",
		chromedp.SetValue(chromedp.ID("knob-fans_per_second"), "40"),
		chromedp.Click(chromedp.ID("knob-fans_per_second-set")),
	)
	logShows("fans_per_second = 40")
	if got := note("fans_per_second"); !strings.Contains(got, "queue-drains") || !strings.Contains(got, "0:") {
		t.Errorf("note under the fans knob = %q, want the queue-drains phase that sets it to 0, and when", got)
	}
	// The whole on-sale: the seats sell out, and the answers fans met are counted.
	eventually(3*time.Minute, "the flash sale ends", func() bool {
		return value(`document.getElementById("run-status").dataset.state`) == "done"
	})
	refused, failed := number("total-refused"), number("total-failed")
	t.Logf("flash sale: %d expected refusals, %d timeouts and errors, %d 429s, %d accepted", refused, failed, number("total-too-many"), number("total-ok"))
	if refused == 0 || failed >= refused {
		t.Errorf("flash sale: %d timeouts and errors, %d expected refusals; want the refusals counted apart, and more of them", failed, refused)
	}

	// store-outage: a lower limit by hand shows in the event log.
	startRun("store-outage", "5m", 2)
	inView("chart-decisions", "knob-rate-set")
	do("lower the per-user limit",
		chromedp.SetValue(chromedp.ID("knob-rate"), "2"),
		chromedp.Click(chromedp.ID("knob-rate-set")),
	)
	logShows("rate = 2")
	stopRun("store-outage")

	if errText := value(`document.getElementById("run-error").textContent`); errText != "" {
		t.Errorf("the page reports an error: %q", errText)
	}
	if p := problems.String(); p != "" {
		t.Errorf("the page had script errors: %s", p)
	}
}

// colour2xx is the 2xx band's colour as uPlot paints it: #009e73 at 70% over white.
var colour2xx = [3]int{0x4d, 0xbb, 0x9d}

// colourStore is the store's band, the bottom one of the decisions chart: #0072b2 at 70%
// over white.
var colourStore = [3]int{0x4d, 0x9c, 0xc9}

// chartPixels counts the pixels of the chart's canvas within a small distance of rgb.
func chartPixels(t *testing.T, value func(string) string, id string, rgb [3]int) int {
	t.Helper()
	expr := fmt.Sprintf(`(() => {
		const c = document.querySelector("#%s canvas");
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4) {
			if (Math.abs(d[i]-%d) + Math.abs(d[i+1]-%d) + Math.abs(d[i+2]-%d) < 40 && d[i+3] > 200) n++;
		}
		return String(n);
	})()`, id, rgb[0], rgb[1], rgb[2])
	n, err := strconv.Atoi(value(expr))
	if err != nil {
		t.Fatalf("count %s pixels: %v", id, err)
	}
	return n
}

// checkNotBlank decodes the screenshot and requires a page's worth of ink: many colours and
// a fair share of pixels that are not background white.
func checkNotBlank(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode screenshot %s: %v", path, err)
	}
	colours := map[[3]uint32]bool{}
	inked, total := 0, 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			if r>>8 < 235 || g>>8 < 235 || b>>8 < 235 {
				inked++
			}
			total++
		}
	}
	if bounds.Dx() < 800 || bounds.Dy() < 600 {
		t.Errorf("screenshot is %dx%d, want at least 800x600", bounds.Dx(), bounds.Dy())
	}
	if len(colours) < 64 {
		t.Errorf("screenshot has %d distinct colours, want at least 64 (text, charts, tiles)", len(colours))
	}
	if share := float64(inked) / float64(total); share < 0.03 {
		t.Errorf("screenshot is %.1f%% non-white, want at least 3%%", 100*share)
	}
}

// chromiumPath finds Debian's chromium (or a Chrome) on PATH; without one the test is skipped
// locally and fails in CI.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testkit.Missing(t, "chromium (apt-get install chromium)")
	return ""
}

// chromium starts a headless browser with a fresh profile and returns a tab's context.
func chromium(t *testing.T, path string) (context.Context, context.CancelFunc) {
	t.Helper()
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1600),
	)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil { // starts the browser and opens the tab
		cancel()
		acancel()
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return ctx, func() { cancel(); acancel() }
}

// tab is a headless browser's tab for a test, its page's problems watched; it closes when
// the test ends.
type tab struct {
	t        *testing.T
	ctx      context.Context
	problems *pageProblems
}

func openTab(t *testing.T, browser string) *tab {
	t.Helper()
	ctx, cancel := chromium(t, browser)
	t.Cleanup(cancel)
	return &tab{t: t, ctx: ctx, problems: watchPage(ctx)}
}

// do runs steps on the page, within 30 s.
func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	actx, acancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer acancel()
	if err := chromedp.Do(actx, steps...); err != nil {
		b.t.Fatalf("%s: %v\npage problems: %s", what, err, b.problems)
	}
}

// value reads a JavaScript expression's value (a string) from the page.
func (b *tab) value(expr string) string {
	b.t.Helper()
	actx, acancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer acancel()
	v, err := chromedp.Run(actx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("read %s: %v\npage problems: %s", expr, err, b.problems)
	}
	return v
}

// pageProblems collects uncaught script exceptions and console errors for the test to report.
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

// watchPage subscribes to the tab's exceptions and console errors until ctx ends.
func watchPage(ctx context.Context) *pageProblems {
	p := &pageProblems{}
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	console := chromedp.Events(ctx, runtime.ConsoleAPICalled)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			p.add(msg)
		}
	}()
	go func() {
		for ev, err := range console {
			if err != nil {
				return
			}
			if ev.Type != runtime.ConsoleAPICalledTypeError {
				continue
			}
			var msg []string
			for _, a := range ev.Args {
				msg = append(msg, string(a.Value)+a.Description)
			}
			p.add("console.error: " + strings.Join(msg, " "))
		}
	}()
	return p
}

func (p *pageProblems) add(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, strings.TrimSpace(msg))
}

func (p *pageProblems) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.list, "; ")
}
