// Package docs holds the tests that keep BoxOffice's documentation true: every code link
// points to a file and symbol that exist, and every Mermaid diagram parses.
package docs
