//go:build race

package figures_test

// raceEnabled: the test binary runs under the race detector, and so does
// the logtool it builds (see buildLogtool).
const raceEnabled = true

// raceSlowdown divides the kill tests' sessions (killEvents): a logtool
// built with -race imports an eighth of the session in about the time a
// plain one takes for all of it (174 ms and 111 ms, measured).
const raceSlowdown = 8
