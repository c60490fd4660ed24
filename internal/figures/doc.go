// Package figures holds the tests that measure the figures of
// docs/reliability.md ("Figures"): each test sweeps one kind of damage over
// logs it writes itself, asserts the promise (nothing acknowledged lost,
// nothing silent where the format can see it) and logs one "figure:" line
// per row of the table. They run CI-sized by default; SESSIONLOG_FIGURES=long
// runs the long version (docs/reliability.md gives the command).
//
// It has no code of its own beside the tests, and knows the store only
// through the public API of handle, checkpoint and eventlog: it must not
// know how they find what they find.
package figures
