// Command jscluster measures the JetStream store on real nats-server
// processes (built from the module's go.sum, sync_interval: always) and
// prints the two tables of docs/distributed.md §Measured:
//
//   - throughput: 64 appenders on one session (Append and Flush one event
//     each, group commit shares the publishes) on the file store, on one
//     node (R1) and on three (R3), beside the floor any JetStream store
//     shares — the plain nats.go client publishing the same messages, with
//     the same headers, one after the other, each waiting for its ack;
//
//   - stalls: writers appending through faults (a follower frozen, the
//     leader frozen, the leader killed, all three killed and restarted),
//     from each fault to each writer's first acknowledged flush begun after
//     it, median and worst over the rounds.
//
//     cd bench && go run ./cmd/jscluster                 # both tables, ~5 min
//     cd bench && go run ./cmd/jscluster -only stalls -rounds 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "jscluster:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		only      = flag.String("only", "", "throughput or stalls (default: both)")
		appenders = flag.Int("appenders", 64, "appenders on the session")
		events    = flag.Int("events", 40000, "events each throughput run appends")
		rounds    = flag.Int("rounds", 5, "rounds of each fault")
		writers   = flag.Int("writers", 3, "writers through the faults, one connection each, spread over the nodes")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin, err := natstest.Build()
	defer natstest.RemoveBuilt()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "jscluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *only == "" || *only == "throughput" {
		rows, err := throughput(ctx, bin, dir, *appenders, *events)
		if err != nil {
			return err
		}
		printThroughput(os.Stdout, *appenders, rows)
	}
	if *only == "" || *only == "stalls" {
		rows, err := stalls(ctx, bin, dir, *writers, *rounds)
		if err != nil {
			return err
		}
		printStalls(os.Stdout, *writers, *rounds, rows)
	}
	return nil
}
