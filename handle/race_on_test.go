//go:build race

package handle_test

// raceEnabled: the test binary runs under the race detector, which makes
// compressing and comparing megabytes at every cut point of a power-cut
// sweep cost minutes.
const raceEnabled = true
