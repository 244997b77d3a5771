//go:build !race

package gateway

// raceSlowdown scales the time bounds of tests that measure behaviour under full load; 1
// without the race detector.
const raceSlowdown = 1
