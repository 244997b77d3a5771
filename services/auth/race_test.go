//go:build race

package auth

// raceEnabled is true under -race, which slows code enough to void timing expectations.
const raceEnabled = true
