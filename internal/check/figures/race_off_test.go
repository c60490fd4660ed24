//go:build !race

package figures_test

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = false

// raceSlowdown divides the kill tests' sessions (killEvents): none
// without the race detector.
const raceSlowdown = 1
