// Package harness runs sessionlog and the alternatives it is measured
// against on the bench workload (package workload), interleaved run by
// run, and writes the results as markdown tables into a marked section of
// docs/performance.md. cmd/harness is its command line.
//
// Every measurement runs in a child process (the harness binary re-run
// with -child): its peak RSS and CPU time are its own, and no variant
// inherits another's heap. The parent prepares the files the read, stat
// and size scenarios work on once, then for each run starts every
// variant of every scenario in turn (A, B, C, A, B, C, …), so that a
// change in the machine's load hits each variant of a run alike; ratios
// are taken within a run, then summarised over the runs.
//
// It knows the library only through its public API (handle, eventlog,
// projection, replay, checkpoint) and the alternatives only through
// theirs. Nothing in the library imports it: its dependencies (SQLite,
// bbolt, raft-wal, tidwall/wal, goccy/go-json, sonic) stay in the bench
// module.
//
// Not safe for concurrent use: one Run at a time per process.
package harness
