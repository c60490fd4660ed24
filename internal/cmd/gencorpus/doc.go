// Command gencorpus writes sessionlog's own fixture corpus, the sessions in
// testdata/sessions that `go test ./replay/replaytest` replays against
// golden files. Run it from the repository root:
//
//	go run ./internal/cmd/gencorpus                    # the sessions and README.md
//	go test ./replay/replaytest -run Corpus -update    # their goldens, then review the diff
//
// The output is deterministic: fixed session IDs (handle.WithID), fixed
// createdAt (handle.Config.Now) and explicit event times, so running it twice
// gives the same files, and a test (gencorpus_test.go) checks that the
// committed corpus is what this program writes. Sessions are built through
// the library's own write path (handle, checkpoint, recorder), never by hand,
// so every fixture is a log the library could have written.
//
// It replaces every *.jsonl, *.jsonl.zst and README.md in the folder and
// leaves golden files alone: a golden whose fixture is gone is reported
// (and, under -update, deleted) by replaytest.Dir.
//
// It knows the library's public API, not the format: the one row it writes
// by hand is the torn tail of resumed-crash.jsonl, which models a crash.
package main
