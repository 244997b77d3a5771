package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/playground"
)

// TestPlaygroundLabInBrowser opens the lab page on a running playground, picks the flood
// sample, and reads what the page draws: the fixed window counted on three replicas syncing
// every 100ms admits 120 of the 300, 20 over, beside the exact 100, with the bound in its
// note and the command saying --sync; with one replica, the approximate line admits 100.
func TestPlaygroundLabInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	p := testkit.RunProcess(t, playground.Run, nil)
	page := openTab(t, browser)
	do, value := page.do, page.value
	// row reads the summary table's cells for a line, "" when the page has no such line.
	row := func(name string) string {
		return value(`(() => { const r = document.querySelector('#summary-table tr[data-algorithm="` + name + `"]');
			return r ? [...r.children].map((c) => c.textContent).join(" ") : ""; })()`)
	}

	do("open the lab", chromedp.Navigate(p.HTTPURL+"/lab.html"), chromedp.WaitVisible(chromedp.ID("summary-table")))
	do("pick the flood", chromedp.SetValue(chromedp.ID("preset"), "flood"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("preset").dispatchEvent(new Event("change"))`))
	testkit.Eventually(t, 10*time.Second, "the flood replayed with a sync", func() bool {
		return row("fixed_window ~100ms×3") != ""
	})
	if got, want := row("fixed_window"), "fixed_window 100 200 –"; got != want {
		t.Errorf("exact row = %q, want %q", got, want)
	}
	if got, want := row("fixed_window ~100ms×3"), "fixed_window ~100ms×3 120 180 20"; got != want {
		t.Errorf("approximate row = %q, want %q", got, want)
	}
	if note := value(`document.querySelector('[data-note="fixed_window ~100ms×3"]')?.textContent ?? ""`); note == "" {
		t.Error("no note under the approximate line, want its bound")
	}
	if cli := value(`document.getElementById("cli").textContent`); !strings.Contains(cli, "--sync 100ms") || !strings.Contains(cli, "--limit 100") {
		t.Errorf("command = %q, want --limit 100 and --sync 100ms", cli)
	}

	do("one replica", chromedp.SetValue(chromedp.ID("replicas"), "1"), chromedp.Click(chromedp.ID("replay")))
	testkit.Eventually(t, 10*time.Second, "the flood replayed on one replica", func() bool {
		return row("fixed_window ~100ms×1") != ""
	})
	if got, want := row("fixed_window ~100ms×1"), "fixed_window ~100ms×1 100 200 0"; got != want {
		t.Errorf("one replica's row = %q, want %q", got, want)
	}
	if p := page.problems.String(); p != "" {
		t.Errorf("page problems: %s", p)
	}
}
