// Package agentloop is a small agent loop with a scripted model and real tools
// (read a file, run a command), recorded through package recorder. It is
// what examples/agentloop runs and what `logtool demo` kills and resumes
// (here, not under examples/, so the product binary imports no example):
// after a crash at any point, Run resumes the open turn and carries on with
// the script where the log says it stopped.
//
// It knows the recorder, handle and replay packages; the loop logic is
// deliberately small: a script stands in for the model.
package agentloop
