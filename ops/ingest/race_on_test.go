//go:build race

package ingest_test

// raceEnabled: the test binary runs under the race detector, whose shadow
// memory is part of every process's peak RSS.
const raceEnabled = true
