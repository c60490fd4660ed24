package harness

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	_ "github.com/mattn/go-sqlite3" // the "sqlite3" database/sql driver
	tidwal "github.com/tidwall/wal"
	bolt "go.etcd.io/bbolt"

	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// durable is a log that one or more goroutines append to, each event
// durable (fsynced) when Append returns.
type durable interface {
	Append(ctx context.Context, e workload.Event) error
	// Syncs returns the fsyncs (or durable commits) made so far, or -1
	// when the log does not say.
	Syncs() int64
	Close() error
}

// The append variants, in the order of their rows.
var appendVariants = []struct {
	name string
	open func(dir string) (durable, error)
}{
	{"sessionlog raw", func(dir string) (durable, error) { return openSessionlog(dir, handle.EncodingRaw, false) }},
	{"sessionlog zstd", func(dir string) (durable, error) { return openSessionlog(dir, handle.EncodingZstd, false) }},
	{"sessionlog raw, no fsync", func(dir string) (durable, error) { return openSessionlog(dir, handle.EncodingRaw, true) }},
	// Redaction at write is on in the rows above; these two measure its
	// cost (docs/format.md §11).
	{"sessionlog raw, unredacted", func(dir string) (durable, error) {
		return openSessionlog(dir, handle.EncodingRaw, false, handle.Unredacted())
	}},
	{"sessionlog raw, no fsync, unredacted", func(dir string) (durable, error) {
		return openSessionlog(dir, handle.EncodingRaw, true, handle.Unredacted())
	}},
	{"bare write+fdatasync", openBare},
	{"JSONL + group commit", openJSONL},
	{"tidwall/wal + group commit", openTidwall},
	{"raft-wal + group commit", openRaftWAL},
	{"bbolt Batch", openBolt},
	{"SQLite WAL synchronous=FULL + group commit", openSQLite},
}

// noFsyncVariant and bareVariant name the append variants the targets
// compare against.
const (
	rawVariant     = "sessionlog raw"
	noFsyncVariant = "sessionlog raw, no fsync"
	// unredactedVariant is sessionlog raw without redaction at write.
	unredactedVariant = "sessionlog raw, unredacted"
	bareVariant       = "bare write+fdatasync"
	firstAltVariant   = "JSONL + group commit" // the alternatives are this one and the rows after it
)

// runAppend runs n appenders on the variant for about budget, each
// appending the next workload event and waiting for it to be durable,
// and returns events/s, events/fsync and the p50 and p99 latency of one
// Append.
func runAppend(ctx context.Context, variant, dir string, n int, budget time.Duration, evs []workload.Event) (Metrics, error) {
	i := slices.IndexFunc(appendVariants, func(v struct {
		name string
		open func(dir string) (durable, error)
	}) bool {
		return v.name == variant
	})
	if i < 0 {
		return nil, fmt.Errorf("harness: no append variant %q", variant)
	}
	log, err := appendVariants[i].open(dir)
	if err != nil {
		return nil, err
	}
	syncs0 := log.Syncs()
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		lat   = make([][]time.Duration, n)
		errs  = make([]error, n)
		start = time.Now()
		stop  = start.Add(budget)
	)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				k := next.Add(1) - 1
				t0 := time.Now()
				if err := log.Append(ctx, evs[int(k)%len(evs)]); err != nil {
					errs[g] = err
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	syncs := log.Syncs() - syncs0
	if err := errors.Join(append(errs, log.Close())...); err != nil {
		return nil, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	m := Metrics{
		"events":   float64(len(all)),
		"events/s": float64(len(all)) / elapsed.Seconds(),
	}
	if len(all) > 0 {
		m["p50-ns"] = float64(all[len(all)/2])
		m["p99-ns"] = float64(all[len(all)*99/100])
	}
	if syncs0 >= 0 && syncs > 0 {
		m["events/fsync"] = float64(len(all)) / float64(syncs)
	}
	return m, nil
}

// sessionlogLog is a sessionlog session: Append then Flush.
type sessionlogLog struct {
	h      handle.Handle
	counts *benchfs.Counts
	noSync bool
}

func openSessionlog(dir, encoding string, noFsync bool, opts ...handle.Option) (durable, error) {
	fsys, counts := benchfs.New(noFsync)
	store := file.New(fsys, filepath.Join(dir, "sessions"), append([]handle.Option{handle.WithEncoding(encoding)}, opts...)...)
	h, err := store.Create(context.Background())
	if err != nil {
		return nil, err
	}
	return &sessionlogLog{h, counts, noFsync}, nil
}

func (s *sessionlogLog) Append(ctx context.Context, e workload.Event) error {
	if _, err := s.h.Append(ctx, eventlog.Event{Type: e.Type, Time: e.Time, Data: e.Data}); err != nil {
		return err
	}
	return s.h.Flush(ctx)
}

func (s *sessionlogLog) Syncs() int64 {
	if s.noSync {
		return -1
	}
	return s.counts.Syncs.Load()
}

func (s *sessionlogLog) Close() error { return s.h.Close() }

// bareLog writes each event's line with one write and one fdatasync,
// appenders taking turns: no library, no group commit.
type bareLog struct {
	mu    sync.Mutex
	f     *os.File
	seq   int64
	line  []byte
	syncs int64
}

func openBare(dir string) (durable, error) {
	f, err := os.OpenFile(filepath.Join(dir, "bare.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &bareLog{f: f}, nil
}

func (b *bareLog) Append(_ context.Context, e workload.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.Seq = b.seq
	b.line = append(e.AppendJSON(b.line[:0]), '\n')
	if _, err := b.f.Write(b.line); err != nil {
		return err
	}
	if err := syscall.Fdatasync(int(b.f.Fd())); err != nil {
		return err
	}
	b.seq++
	b.syncs++
	return nil
}

func (b *bareLog) Syncs() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.syncs
}

func (b *bareLog) Close() error { return b.f.Close() }

// groupLog is an alternative behind groupCommit: its commit makes one
// batch durable.
type groupLog struct {
	g     *groupCommit
	close func() error
}

func (l *groupLog) Append(_ context.Context, e workload.Event) error { return l.g.Append(e) }
func (l *groupLog) Syncs() int64                                     { return l.g.Commits() }
func (l *groupLog) Close() error                                     { return l.close() }

// openJSONL is hand-written JSONL: a batch is one write and one fdatasync.
func openJSONL(dir string) (durable, error) {
	f, err := os.OpenFile(filepath.Join(dir, "group.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	var buf []byte
	g := newGroupCommit(func(first int64, batch []workload.Event) error {
		buf = buf[:0]
		for i := range batch {
			batch[i].Seq = first + int64(i)
			buf = append(batch[i].AppendJSON(buf), '\n')
		}
		if _, err := f.Write(buf); err != nil {
			return err
		}
		return syscall.Fdatasync(int(f.Fd()))
	})
	return &groupLog{g, f.Close}, nil
}

// openTidwall is tidwall/wal, fsync on (its default): a batch is one
// WriteBatch.
func openTidwall(dir string) (durable, error) {
	l, err := tidwal.Open(filepath.Join(dir, "tidwall"), nil)
	if err != nil {
		return nil, err
	}
	var b tidwal.Batch
	var line []byte
	g := newGroupCommit(func(first int64, batch []workload.Event) error {
		b.Clear()
		for i := range batch {
			batch[i].Seq = first + int64(i)
			line = batch[i].AppendJSON(line[:0])
			b.Write(uint64(first)+uint64(i)+1, line) // Batch.Write copies; indexes start at 1
		}
		return l.WriteBatch(&b)
	})
	return &groupLog{g, l.Close}, nil
}

// openRaftWAL is hashicorp/raft-wal: a batch is one StoreLogs (one
// write and one fsync of the segment).
func openRaftWAL(dir string) (durable, error) {
	d := filepath.Join(dir, "raftwal")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, err
	}
	w, err := raftwal.Open(d)
	if err != nil {
		return nil, err
	}
	g := newGroupCommit(func(first int64, batch []workload.Event) error {
		logs := make([]*raft.Log, len(batch))
		for i := range batch {
			batch[i].Seq = first + int64(i)
			logs[i] = &raft.Log{Index: uint64(first) + uint64(i) + 1, Term: 1, Type: raft.LogCommand, Data: batch[i].AppendJSON(nil)}
		}
		return w.StoreLogs(logs)
	})
	return &groupLog{g, w.Close}, nil
}

// boltLog is bbolt with DB.Batch, its own group commit (it coalesces
// concurrent Batch calls into one transaction, after at most
// MaxBatchDelay, 10 ms by default).
type boltLog struct {
	db  *bolt.DB
	seq atomic.Int64
}

var boltBucket = []byte("events")

func openBolt(dir string) (durable, error) {
	db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o600, nil)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	})
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return &boltLog{db: db}, nil
}

func (l *boltLog) Append(_ context.Context, e workload.Event) error {
	e.Seq = l.seq.Add(1) - 1
	line := e.AppendJSON(nil)
	key := binary.BigEndian.AppendUint64(nil, uint64(e.Seq))
	return l.db.Batch(func(tx *bolt.Tx) error { return tx.Bucket(boltBucket).Put(key, line) })
}

func (l *boltLog) Syncs() int64 { return -1 }
func (l *boltLog) Close() error { return l.db.Close() }

// openSQLite is SQLite in WAL mode with synchronous=FULL (every commit
// fsyncs the WAL): a batch is one transaction.
func openSQLite(dir string) (durable, error) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "events.db")+"?_journal_mode=WAL&_synchronous=FULL")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, time INTEGER NOT NULL, data TEXT NOT NULL)`); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	g := newGroupCommit(func(first int64, batch []workload.Event) error {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		st, err := tx.Prepare(`INSERT INTO events (seq, type, time, data) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return errors.Join(err, tx.Rollback())
		}
		for i, e := range batch {
			if _, err := st.Exec(first+int64(i), e.Type, e.Time, string(e.Data)); err != nil {
				return errors.Join(err, st.Close(), tx.Rollback())
			}
		}
		if err := st.Close(); err != nil {
			return errors.Join(err, tx.Rollback())
		}
		return tx.Commit()
	})
	return &groupLog{g, db.Close}, nil
}

// runPaired appends, from one goroutine, each workload event to a
// sessionlog raw session and to the bare write+fdatasync file in turn
// (which goes first alternates), for about budget, and returns the p50
// and p99 latency of each and the ratio of the p50s. Pairing event by
// event keeps the two comparable when the machine's fsync latency moves
// from one second to the next, as it does under other processes' I/O.
func runPaired(ctx context.Context, dir string, budget time.Duration, evs []workload.Event) (Metrics, error) {
	sl, err := openSessionlog(dir, handle.EncodingRaw, false)
	if err != nil {
		return nil, err
	}
	bare, err := openBare(dir)
	if err != nil {
		return nil, errors.Join(err, sl.Close())
	}
	logs := [2]durable{sl, bare}
	var lat [2][]time.Duration
	stop := time.Now().Add(budget)
	for k := 0; time.Now().Before(stop); k++ {
		e := evs[k%len(evs)]
		for j := range 2 {
			i := (k + j) % 2
			t0 := time.Now()
			if err := logs[i].Append(ctx, e); err != nil {
				return nil, errors.Join(err, sl.Close(), bare.Close())
			}
			lat[i] = append(lat[i], time.Since(t0))
		}
	}
	if err := errors.Join(sl.Close(), bare.Close()); err != nil {
		return nil, err
	}
	m := Metrics{"events": float64(len(lat[0]))}
	for i, prefix := range []string{"", "bare-"} {
		slices.Sort(lat[i])
		m[prefix+"p50-ns"] = float64(lat[i][len(lat[i])/2])
		m[prefix+"p99-ns"] = float64(lat[i][len(lat[i])*99/100])
	}
	m["p50-ratio"] = m["p50-ns"] / m["bare-p50-ns"]
	return m, nil
}
