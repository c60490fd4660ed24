//go:build race

package natstest

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
