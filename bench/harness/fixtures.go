package harness

import (
	"context"
	"os"
	"path/filepath"

	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// prepare writes the files the read and ops scenarios work on under
// fixtures: the read workload as plain JSONL and as a raw and a zstd
// session, and for each ops size a raw and a zstd session of that much
// plain JSONL (the workload repeated), each closed after a checkpoint so
// that its digest state is saved. The files are written without fsync:
// only their bytes matter.
func prepare(ctx context.Context, fixtures string, readTurns int, opsSizes []int64) error {
	evs := workload.Generate(workload.Config{Seed: 1, Turns: readTurns})
	f, err := os.Create(filepath.Join(fixtures, readJSONL))
	if err != nil {
		return err
	}
	if err := workload.WriteJSONL(f, evs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fsys, _ := benchfs.New(true)
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		store := file.New(fsys, filepath.Join(fixtures, readStoreDir), handle.WithEncoding(enc))
		id, err := writeSession(ctx, store, evs)
		if err != nil {
			return err
		}
		name := rawIDFile
		if enc == handle.EncodingZstd {
			name = zstdIDFile
		}
		if err := os.WriteFile(filepath.Join(fixtures, name), []byte(id), 0o600); err != nil {
			return err
		}
	}
	for _, size := range opsSizes {
		big := cycled(evs, size)
		for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
			store := file.New(fsys, filepath.Join(opsDir(fixtures, size), "sessions"), handle.WithEncoding(enc))
			id, err := writeSession(ctx, store, big, func(h handle.Handle) error {
				_, err := checkpoint.Create(ctx, h)
				return err
			})
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(opsDir(fixtures, size), enc+".id"), []byte(id), 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSession writes evs to a new session of store, one Append per event
// and a Flush per turn, runs each of before on the handle, and closes it.
func writeSession(ctx context.Context, store *file.Store, evs []workload.Event, before ...func(handle.Handle) error) (string, error) {
	h, err := store.Create(ctx)
	if err != nil {
		return "", err
	}
	for i, e := range evs {
		if _, err := h.Append(ctx, eventToLog(e, -1)); err != nil {
			h.Close()
			return "", err
		}
		if i == len(evs)-1 || evs[i+1].Turn != e.Turn {
			if err := h.Flush(ctx); err != nil {
				h.Close()
				return "", err
			}
		}
	}
	for _, f := range before {
		if err := f(h); err != nil {
			h.Close()
			return "", err
		}
	}
	return h.ID(), h.Close()
}

// eventToLog converts a workload event to an eventlog event with the given
// seq (the handle assigns its own on Append).
func eventToLog(e workload.Event, seq int64) eventlog.Event {
	return eventlog.Event{Seq: seq, Type: e.Type, Time: e.Time, Data: e.Data}
}

// cycled returns the shortest prefix of whole turns of evs whose
// plain-JSONL size reaches target bytes, or evs repeated (workload.Repeat)
// when all of it is smaller.
func cycled(evs []workload.Event, target int64) []workload.Event {
	var n int64
	var line []byte
	for i := range evs {
		line = evs[i].AppendJSON(line[:0])
		n += int64(len(line)) + 1
		if n >= target && (i == len(evs)-1 || evs[i+1].Turn != evs[i].Turn) {
			return evs[:i+1]
		}
	}
	return workload.Repeat(evs, target)
}
