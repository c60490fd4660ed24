//go:build !race

package handle_test

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = false
