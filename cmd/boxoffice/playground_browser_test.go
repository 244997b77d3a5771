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
// rate-limiter, sees the charts receive data, turns the limit on with the page's own knob and
// sees the 429 counter rise; a screenshot of the page must not be blank.
func TestPlaygroundInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	if testing.Short() {
		t.Skip("starts the whole system and a browser")
	}
	ep := startUp(t)

	ctx, cancel := chromium(t, browser)
	defer cancel()
	problems := watchPage(ctx)

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, 30*time.Second)
		defer acancel()
		if err := chromedp.Do(actx, steps...); err != nil {
			t.Fatalf("%s: %v\npage problems: %s", what, err, problems)
		}
	}
	// value reads a JavaScript expression's value (a string) from the page.
	value := func(expr string) string {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		defer acancel()
		v, err := chromedp.Run(actx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("read %s: %v\npage problems: %s", expr, err, problems)
		}
		return v
	}
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

	// Turn the limit on through the page's knobs, at a rate far below the offered load.
	before := number("total-too-many")
	if before != 0 {
		t.Fatalf("429s before the limit is on = %d, want 0 (the first phase of %s runs without it)", before, profile)
	}
	do("set the limit's rate",
		chromedp.SetValue(chromedp.ID("knob-rate"), "5"),
		chromedp.Click(chromedp.ID("knob-rate-set")),
		chromedp.Click(chromedp.ID("knob-limit")),
	)
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

	do("stop the run", chromedp.Click(chromedp.ID("stop")))
	eventually(30*time.Second, "the run ends after Stop", func() bool {
		s := value(`document.getElementById("run-status").dataset.state`)
		return s == "done" || s == "failed"
	})
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
