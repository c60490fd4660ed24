//go:build race

package figures_test

// raceEnabled: the test binary runs under the race detector, and so does
// the logtool it builds (see buildLogtool).
const raceEnabled = true

// raceSlowdown divides the kill tests' sessions (killEvents): a logtool
// built with -race writes about that many times slower.
const raceSlowdown = 8
