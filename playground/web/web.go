// Package web holds the playground's browser pages: plain HTML, CSS and ES modules that a
// student can read without a bundler, and the vendored charting library (uPlot, with its
// licence). The Go binary embeds them, so the playground needs no network and no Node.
package web

import "embed"

// Files is every page, script, style sheet, sample trace and vendored file, rooted at this
// directory: index.html is the scenario runner, lab.html the algorithm lab.
//
//go:embed *.html *.css *.js traces vendor
var Files embed.FS
