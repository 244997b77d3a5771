// Package docs holds the tests that keep BoxOffice's documentation true: every code link
// points to a file and symbol that exist, every Mermaid diagram parses, every measured figure
// a lesson or ADR quotes is one docs/benchmarks.md states, and the case study's estimates are
// what the limiter measures on a real Redis.
package docs
