package raceexit

import (
	"os"
	"strings"
	"testing"
)

// Quiet sets atexit_sleep_ms=0 in GORACE for the processes started from
// now on, keeping any other GORACE option, and leaves a value the user
// set alone. Call it from TestMain, before the tests run (it changes the
// process's environment).
func Quiet() {
	cur := os.Getenv("GORACE")
	if strings.Contains(cur, "atexit_sleep_ms=") {
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(cur+" atexit_sleep_ms=0"))
}

// Main is a TestMain for a package that needs nothing else: Quiet, then
// the tests.
func Main(m *testing.M) {
	Quiet()
	os.Exit(m.Run())
}
