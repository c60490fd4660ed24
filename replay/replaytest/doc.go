// Package replaytest runs golden tests of projections over session
// fixtures: it replays a session file and compares each projection's state
// with a golden file beside it. Use it in your own tests to pin what your
// projections make of recorded sessions; sessionlog uses it on its own
// corpus (testdata/sessions).
//
// From sessionlog's own tests of its corpus:
//
//	// TestCorpus replays every fixture of the corpus with the built-in
//	// projections and compares their states with the goldens: a change in a
//	// projection's behaviour fails here with the first differing JSON path.
//	func TestCorpus(t *testing.T) {
//		replaytest.Dir(t, corpusDir, nil)
//	}
//	...
//	func TestGoldenOfOneFixture(t *testing.T) {
//		replaytest.Golden(t, filepath.Join(corpusDir, "rollback.jsonl"), projection.NewAgent(), projection.NewTranscript())
//	}
//
// # Files
//
// A fixture is a session log file, raw (.jsonl) or zstd (.jsonl.zst),
// named freely; a fork's parent is looked up by ID in the fixture's folder
// (as <ID>.jsonl or <ID>.jsonl.zst). The golden file of a projection is
// <fixture>.<name>-v<version>.golden.json: its state after the whole log,
// rollbacks applied, as pretty-printed JSON (package golden writes and
// compares it; `logtool replay --golden` uses the same code).
//
// # Recording a fixture
//
// Export the session, or its events up to the behaviour to pin, as a
// standalone raw file (a fork's inherited events included, no parent):
//
//	logtool export --to 412 --out testdata/sessions/bug-123.jsonl SESSION
//
// To redact one, edit only its header line (labels; no digest covers it)
// and never run a JSON tool over its rows, or rebuild the session: `logtool
// cat --json` through your redaction, checkpoints renamed to a type no
// projection reads, into `logtool append`, then export that. From a shell,
// `logtool replay --projection agent --golden F.agent-v1.golden.json F`
// makes the same comparison (exit 0 match, 1 differs, 2 usage), for CI jobs
// with no Go test of their own.
//
// # Updating
//
// `go test -update` (a flag this package registers, unless the test binary
// already has one of that name) or SESSIONLOG_UPDATE_GOLDEN=1 rewrites the
// goldens that differ and creates the missing ones. The environment
// variable also works for `go test ./...`, where packages that do not
// import replaytest would refuse an -update flag. Review the change, then
// commit it. Without it a mismatch fails with the first differing JSON
// path and both values, and a missing golden fails with the command that
// creates it.
//
// # Fresh projections
//
// A projection holds state, so each fixture needs its own instances:
// Golden takes instances (made for that one call), Dir takes a Factory it
// calls once per fixture.
//
// Besides the states, every replay recomputes the log digests of the
// fixture's checkpoints, so a fixture edited by hand fails loudly. State
// digests recorded in checkpoints are not checked here (a projection whose
// behaviour changed would fail there before its diff could be shown); use
// checkpoint.Verify for that.
package replaytest
