//go:build race

package gateway

// raceSlowdown scales the time bounds of tests that measure behaviour under full load, for
// a binary built with the race detector.
const raceSlowdown = 10
