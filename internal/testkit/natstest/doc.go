// Package natstest runs nats-servers inside tests and benchmarks: one
// node, or a three-node cluster routed on loopback ports, JetStream on,
// each node in a temp folder, all shut down when the test ends — either
// in-process (Run, RunCluster) or as real processes built from the
// module's go.sum (Build, RunProcs), which a test can SIGKILL and SIGSTOP.
// It is test support: it knows nats-server and nothing of sessionlog.
package natstest
