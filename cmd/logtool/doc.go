// Command logtool creates, appends to, reads and checks sessionlog sessions
// from the shell. docs/cli.md is its contract for scripts: commands, flags,
// output and exit statuses, generated from the commands' own help texts
// (go test ./cmd/logtool -run TestCLIDoc -update; the test fails when the
// page and the help differ), so a command's contract is written once, in
// its Long and Example.
//
// Exit status: 0 done and clean; 1 a check failed (corruption, a seq
// conflict, a session locked by another writer); 2 a usage or environment
// error (bad flags, a session not found, I/O). Errors go to stderr as one
// line starting with "logtool: ".
//
// It is thin: flags, output and exit codes. It must not implement the format
// or the durability rules itself; every operation is a call into eventlog,
// handle, checkpoint, replay, projection or recorder, and `serve` hands
// HTTP to internal/app/web.
package main
