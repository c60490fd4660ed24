// Package raceexit keeps the race detector from sleeping at the exit of
// the processes a test starts. A binary built with -race sleeps for
// GORACE's atexit_sleep_ms (one second unless set) as it exits; a test
// that starts many of them (its own binary re-executed, a logtool built
// with -race) would wait that second each time. Its TestMain calls Quiet
// before the tests run.
//
// It is test support, imported only by tests: it sets one environment
// variable and knows nothing of sessionlog.
package raceexit
