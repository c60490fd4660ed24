// Command agentloop is a runnable agent loop with a scripted model and real
// tools (read a file, run a command), recorded with sessionlog's recorder.
// Kill it at any moment and run it again with the same --session: it
// resumes the open turn and carries on.
//
//	go run ./examples/agentloop --dir sessions            # a new session
//	go run ./examples/agentloop --dir sessions --session ID
//
// The loop is package internal/app/agentloop, the one `logtool demo` runs too;
// it and this command use only the public API (handle, recorder, replay),
// and must not know the file format.
package main
