// Package figures holds the tests that measure the figures of
// docs/reliability.md ("Figures"): each test sweeps one kind of damage over
// logs it writes itself, asserts the promise (nothing acknowledged lost,
// nothing silent where the format can see it) and logs one "figure:" line
// per row of the table. By default each runs a small sample (so that the
// README's test command stays short); SESSIONLOG_SWEEPS=full runs the CI
// size, which the figures are quoted at, and SESSIONLOG_SWEEPS=long the
// long version (internal/testkit/sweep; docs/reliability.md gives the commands).
//
// It has no code of its own beside the tests, and knows the store only
// through the public API of handle, checkpoint and eventlog: it must not
// know how they find what they find.
package figures
