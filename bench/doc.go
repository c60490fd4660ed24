// Package bench holds end-to-end benchmarks of sessionlog against the
// synthetic agent workload of agentworkload (../../shared/workload), and
// against the naive JSONL writer and reader agent frameworks use.
//
// It is a separate module so that its dependencies (the workload generator)
// never reach the library's go.mod. Run from this folder:
//
//	go test -run '^$' -bench BenchmarkRead -benchtime 20x -count 5 .
//	go test -run '^$' -bench BenchmarkWrite -benchtime 28444x -count 5 .
//
// Results and their reading: ../docs/performance.md.
package bench
