// Package bench holds end-to-end benchmarks of sessionlog against the
// synthetic agent workload of package workload (bench/workload: seeded,
// deterministic, shaped like a coding agent's sessions), and against the
// naive JSONL writer and reader agent frameworks use.
//
// It is a separate module so that its code and dependencies never reach the
// library's go.mod. It builds and runs from a fresh clone. Run from this
// folder:
//
//	go test -run '^$' -bench BenchmarkRead -benchtime 20x -count 5 .
//	go test -run '^$' -bench BenchmarkWrite -benchtime 25827x -count 5 .
//
// The zstd, checkpoint, replay and fork benchmarks (zstd_test.go,
// checkpoint_test.go, replay_test.go, fork_test.go) also use the 2,000-turn
// workload (260,984 events, 86 MB of JSONL), generated once per process.
// Their large sizes (the 2,000-turn log, ~100 MB files, 100k-event
// replays) run only with SESSIONLOG_BENCH_LARGE=1, so that the smoke run
// stays short:
//
//	go vet ./... && go test -run '^$' -bench . -benchtime 1x ./...   # smoke, ~6 s
//	SESSIONLOG_BENCH_LARGE=1 go test -run '^$' -bench BenchmarkFork -benchtime 20x -count 5 .
//
// The side-by-side comparison with the alternatives (SQLite, bbolt,
// raft-wal, tidwall/wal, hand-written JSONL, encoding/json, goccy/go-json,
// sonic) is not a go test benchmark but a command, which rewrites its
// section of docs/performance.md (package harness):
//
//	go run ./cmd/harness
//
// Each benchmark's comment gives the command behind its figures; both are
// read in ../docs/performance.md (the harness's tables, then "Component
// benchmarks").
package bench
