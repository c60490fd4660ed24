package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionlog/sessionlog/bench/harness"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// BenchmarkManySessions measures what looks across sessions in file
// stores of 10k and 100k small sessions (1M with SESSIONLOG_BENCH_LARGE):
// each has two labels (task=<i>, unique; agent=<i mod 100>) and 5 events;
// every hundredth is a fork of the one before. The operations, through
// the library (lib/…) and through the logtool binary (cli/…, a process
// per op, warm page cache):
//
//   - prefix: resolve a session by the first 24 characters of its ID;
//   - label: resolve task=<i>;
//   - page: the first page of ls (List Limit 50; ls --limit 50);
//   - tree: the tree of one session (handle.SessionTree);
//   - open: open a session for append, append an event, close;
//   - fold: the open of the index that folds its delta and marks into a
//     new snapshot (changes of 257 sessions at a time made untimed);
//   - gc1pct: GC of 1 % of the sessions, made old before each op;
//   - rebuild: the index rebuilt from the logs alone (lost index).
//
// A store is built once per size through the library with fsync off
// (the figures are of reads) and its index off — a file where the
// index's folder goes, so no marks nor folds — then indexed once from the
// logs (1M: ~45 min at load 15, then the rebuild); with
// SESSIONLOG_BENCH_STORE it is kept and reused.
func BenchmarkManySessions(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if large() {
		sizes = append(sizes, 1_000_000)
	}
	if s := os.Getenv(sessionsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("%s=%q", sessionsEnv, s)
		}
		sizes = []int{n}
	}
	exe := logtoolBinary(b)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			dir := filepath.Join(b.TempDir(), "s")
			if keep := os.Getenv(storeEnv); keep != "" {
				dir = filepath.Join(keep, strconv.Itoa(n))
			}
			fs, counts := newCountingFs(true)
			st := file.New(fs, dir)
			ids := keptSessions(dir)
			if ids == nil {
				noIndex := filepath.Join(dir, ".cache")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(noIndex, nil, 0o600); err != nil {
					b.Fatal(err)
				}
				ids = buildSessions(b, st, n, 0)
				if err := os.Remove(noIndex); err != nil {
					b.Fatal(err)
				}
				if os.Getenv(storeEnv) != "" {
					if err := os.WriteFile(dir+".ids", []byte(strings.Join(ids, "\n")), 0o600); err != nil {
						b.Fatal(err)
					}
				}
			}
			if _, err := st.List(ctx, handle.Page(1, handle.Cursor{})); err != nil { // the snapshot
				b.Fatal(err)
			}
			pick := func() int { return rand.IntN(n) }
			// Reads and bytes read an op: what does not grow with the
			// store, whatever the machine's load does to the times.
			lib := func(name string, op func(i int) error) {
				b.Run("lib/"+name, func(b *testing.B) {
					counts.Reset()
					n := 0
					for b.Loop() {
						if err := op(pick()); err != nil {
							b.Fatal(err)
						}
						n++
					}
					b.ReportMetric(float64(counts.Reads.Load())/float64(n), "reads/op")
					b.ReportMetric(float64(counts.ReadBytes.Load())/float64(n), "readB/op")
				})
			}
			lib("prefix", func(i int) error {
				_, err := st.Resolve(ctx, ids[i][:24])
				return err
			})
			lib("label", func(i int) error {
				_, err := st.Resolve(ctx, "task="+strconv.Itoa(i))
				return err
			})
			lib("page", func(int) error {
				infos, err := st.List(ctx, handle.Page(50, handle.Cursor{}))
				if err == nil && len(infos) != 50 {
					err = fmt.Errorf("a page of %d", len(infos))
				}
				return err
			})
			lib("tree", func(i int) error {
				_, err := st.TreeOf(ctx, ids[i])
				return err
			})
			lib("open", func(i int) error {
				h, err := st.Open(ctx, ids[i], handle.ReadWrite)
				if err != nil {
					return err
				}
				if _, err := h.Append(ctx, smallEvent(time.Now().UnixMilli())); err != nil {
					return err
				}
				return h.Close()
			})
			b.Run("lib/fold", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					// Changes of 257 sessions at a time, each folded into
					// the delta by the next open, until the next 257 make
					// the open fold the delta and the marks into a new
					// snapshot: that open is timed.
					for {
						for range 257 {
							h, err := st.Open(ctx, ids[pick()], handle.ReadWrite)
							if err != nil {
								b.Fatal(err)
							}
							if _, err := h.Append(ctx, smallEvent(time.Now().UnixMilli())); err != nil {
								b.Fatal(err)
							}
							if err := h.Close(); err != nil {
								b.Fatal(err)
							}
						}
						if deltaCount(b, dir)+257 > max(1024, n/256) {
							break
						}
						if _, err := st.List(ctx, handle.Page(1, handle.Cursor{})); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					if _, err := st.List(ctx, handle.Page(1, handle.Cursor{})); err != nil {
						b.Fatal(err)
					}
					if deltaCount(b, dir) != 0 {
						b.Fatal("not folded into the snapshot")
					}
				}
			})
			b.Run("lib/gc1pct", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					buildSessions(b, st, n/100, 1000)
					if _, err := st.List(ctx, handle.Page(1, handle.Cursor{})); err != nil { // their marks folded: not GC's cost
						b.Fatal(err)
					}
					b.StartTimer()
					rep, err := st.GC(ctx, time.UnixMilli(100_000), false)
					if err != nil || len(rep.Deleted) != n/100 {
						b.Fatal(err, len(rep.Deleted))
					}
				}
			})
			cli := func(name string, args func(i int) []string) {
				b.Run("cli/"+name, func(b *testing.B) {
					for b.Loop() {
						cmd := exec.Command(exe, append([]string{"--dir", dir}, args(pick())...)...)
						if out, err := cmd.CombinedOutput(); err != nil {
							b.Fatalf("%v: %s", err, out)
						}
					}
				})
			}
			cli("prefix", func(i int) []string { return []string{"stat", "--json", ids[i][:24]} })
			cli("label", func(i int) []string { return []string{"stat", "--json", "task=" + strconv.Itoa(i)} })
			cli("page", func(int) []string { return []string{"ls", "--json", "--limit", "50"} })
			b.Run("lib/rebuild", func(b *testing.B) {
				for b.Loop() {
					if err := os.Remove(filepath.Join(dir, ".cache", "sessions.idx")); err != nil {
						b.Fatal(err)
					}
					if _, err := st.List(ctx, handle.Page(1, handle.Cursor{})); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// deltaCount returns how many sessions the delta of the session index
// of the store in dir holds (docs/format.md §2), 0 without one.
func deltaCount(tb testing.TB, dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, ".cache", "sessions.delta"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	head, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(head) // magic (2 words), gen, folder, count, …
	if len(f) < 5 {
		tb.Fatalf("delta head %q", head)
	}
	n, err := strconv.Atoi(f[4]) // maybe zero-padded
	if err != nil {
		tb.Fatalf("delta head %q: %v", head, err)
	}
	return n
}

// sessionsEnv, when set, is the one store size BenchmarkManySessions
// measures.
const sessionsEnv = "SESSIONLOG_BENCH_SESSIONS"

// storeEnv, when set, is a folder where BenchmarkManySessions keeps the
// stores it builds (<folder>/<n>, their IDs in <folder>/<n>.ids) and
// reuses them: a 1M store takes an hour to build. Its GC op leaves a
// store as large as it found it.
const storeEnv = "SESSIONLOG_BENCH_STORE"

// keptSessions returns the IDs of the store kept in dir, nil when there
// is none.
func keptSessions(dir string) []string {
	b, err := os.ReadFile(dir + ".ids")
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// buildSessions creates n small sessions in st (see
// BenchmarkManySessions), created at base ms and later when base is not
// 0, now otherwise, and returns their IDs. Two goroutines share the work.
func buildSessions(tb testing.TB, st *file.Store, n int, base int64) []string {
	tb.Helper()
	ids := make([]string, n)
	half := n / 200 * 100 // a multiple of 100: a fork's parent is in its range
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w, r := range [][2]int{{0, half}, {half, n}} {
		wg.Go(func() { errs[w] = buildRange(st, ids, r[0], r[1], base) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return ids
}

// buildRange creates sessions lo to hi of buildSessions into ids.
func buildRange(st *file.Store, ids []string, lo, hi int, base int64) error {
	ctx := context.Background()
	for i := lo; i < hi; i++ {
		opts := []handle.Option{handle.WithLabels(map[string]string{"task": strconv.Itoa(i), "agent": strconv.Itoa(i % 100)})}
		if base != 0 {
			opts = append(opts, handle.WithCreatedAt(base+int64(i)))
		}
		var h handle.Handle
		var err error
		if i%100 == 99 {
			h, err = st.Fork(ctx, ids[i-1], 2, opts...)
		} else {
			h, err = st.Create(ctx, opts...)
		}
		if err != nil {
			return err
		}
		t := base + int64(i)
		if base == 0 {
			t = time.Now().UnixMilli()
		}
		evs := make([]eventlog.Event, 5)
		for j := range evs {
			evs[j] = smallEvent(t)
		}
		if i%100 == 99 {
			evs = evs[:2] // after the inherited 0..2
		}
		if _, err := h.Append(ctx, evs...); err != nil {
			return err
		}
		if err := h.Close(); err != nil {
			return err
		}
		ids[i] = h.ID()
	}
	return nil
}

func smallEvent(t int64) eventlog.Event {
	return eventlog.Event{Type: "user/message", Time: t, Data: []byte(`{"text":"hello, a small event"}`)}
}

var (
	logtoolOnce sync.Once
	logtoolExe  string
	logtoolErr  error
)

// logtoolBinary builds the logtool binary once per process.
func logtoolBinary(tb testing.TB) string {
	tb.Helper()
	logtoolOnce.Do(func() {
		dir, err := os.MkdirTemp("", "logtool-bench")
		if err != nil {
			logtoolErr = err
			return
		}
		logtoolExe, logtoolErr = harness.BuildLogtool(context.Background(), dir)
	})
	if logtoolErr != nil {
		tb.Fatal(logtoolErr)
	}
	return logtoolExe
}

// BenchmarkFlatFolder measures a flat folder of n files, as a store of
// n/2 sessions holds (a log and a lock each): creating, looking up and
// removing a file among them, and listing the folder's names. It decides
// whether a store needs nested folders (docs/design.md, "Layout").
func BenchmarkFlatFolder(b *testing.B) {
	sizes := []int{20_000, 200_000}
	if large() {
		sizes = append(sizes, 2_000_000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			name := func(i int) string { return filepath.Join(dir, fmt.Sprintf("%026d.jsonl", i)) }
			for i := range n {
				f, err := os.OpenFile(name(i), os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
			next := n
			b.Run("create", func(b *testing.B) {
				for b.Loop() {
					f, err := os.OpenFile(name(next), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
					next++
				}
			})
			b.Run("lstat", func(b *testing.B) {
				for b.Loop() {
					if _, err := os.Lstat(name(rand.IntN(n))); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("remove", func(b *testing.B) {
				for b.Loop() {
					p := name(next - 1)
					if err := os.Remove(p); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					f, err := os.Create(p) // put back: the folder keeps its size
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
					b.StartTimer()
				}
			})
			b.Run("readdirnames", func(b *testing.B) {
				for b.Loop() {
					d, err := os.Open(dir)
					if err != nil {
						b.Fatal(err)
					}
					names, err := d.Readdirnames(-1)
					d.Close()
					if err != nil || len(names) < n/2 {
						b.Fatal(err, len(names))
					}
				}
			})
		})
	}
}
