// Package loadgen drives handles the way benchmarks measure them: many
// appenders on one session, each waiting for its own flush. It is
// benchmark support: it knows the handle.Handle interface, no store.
package loadgen
