// Package sweep says how far the tests' long sweeps go: the power-cut
// matrices, the kill rounds, the hostile inputs, the cluster faults, the
// property rounds. By default each runs a small sample chosen
// deterministically (the cluster faults on server processes, none), so
// that the README's test command stays short on a laptop;
// SESSIONLOG_SWEEPS=full runs every point (.ci/run does), and
// SESSIONLOG_SWEEPS=long the long figures of docs/reliability.md.
//
// It is test support, imported only by tests: it reads one environment
// variable and knows nothing of sessionlog.
package sweep
