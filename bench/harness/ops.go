package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle"
)

// opsDir is the fixtures folder of the ops scenario for a session size:
// a raw and a zstd session, closed, and their IDs in raw.id and zstd.id.
func opsDir(fixtures string, size int64) string {
	return filepath.Join(fixtures, fmt.Sprintf("ops-%d", size))
}

// opsVariants are the ops scenario's variants, in the order of their rows.
// "copy + fsync" is what a fork costs an application that copies the
// parent's file.
var opsVariants = []string{
	"Stat raw",
	"Stat zstd",
	"Stat zstd, writer open",
	"Open for writing raw",
	"Open for writing zstd",
	"first checkpoint after reopening raw",
	"fork raw",
	"copy + fsync raw",
}

// runOps times reps runs of one ops variant on the session of the given
// size and returns the median time of one op.
func runOps(ctx context.Context, variant, fixtures string, size int64, reps int) (Metrics, error) {
	dir := opsDir(fixtures, size)
	enc := handle.EncodingRaw
	if strings.Contains(variant, "zstd") {
		enc = handle.EncodingZstd
	}
	idb, err := os.ReadFile(filepath.Join(dir, enc+".id"))
	if err != nil {
		return nil, err
	}
	id := string(idb)
	store := handle.NewFileStore(afero.NewOsFs(), filepath.Join(dir, "sessions"))
	var op func() error
	var setup, cleanup func() error
	noop := func() error { return nil }
	setup, cleanup = noop, noop
	switch variant {
	case "Stat raw", "Stat zstd":
		op = func() error { _, err := store.Stat(ctx, id); return err }
	case "Stat zstd, writer open":
		h, err := store.Open(ctx, id, handle.ReadWrite)
		if err != nil {
			return nil, err
		}
		defer h.Close()
		op = func() error { _, err := store.Stat(ctx, id); return err }
	case "Open for writing raw", "Open for writing zstd":
		var h handle.Handle
		op = func() error { var err error; h, err = store.Open(ctx, id, handle.ReadWrite); return err }
		cleanup = func() error { return h.Close() }
	case "first checkpoint after reopening raw":
		var h handle.Handle
		setup = func() error { var err error; h, err = store.Open(ctx, id, handle.ReadWrite); return err }
		op = func() error { _, err := checkpoint.Create(ctx, h); return err }
		cleanup = func() error { return h.Close() }
	case "fork raw":
		info, err := store.Stat(ctx, id)
		if err != nil {
			return nil, err
		}
		var fork handle.Handle
		op = func() error {
			var err error
			if fork, err = store.Fork(ctx, id, info.LastSeq); err != nil {
				return err
			}
			return fork.Close()
		}
		cleanup = func() error { return store.Delete(ctx, fork.ID()) }
	case "copy + fsync raw":
		src, err := store.Path(id)
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(dir, "copy.jsonl")
		op = func() error { return copyDurably(src, dst) }
		cleanup = func() error { return os.Remove(dst) }
	default:
		return nil, fmt.Errorf("harness: no ops variant %q", variant)
	}
	var times []time.Duration
	for range reps {
		if err := setup(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		err := op()
		times = append(times, time.Since(t0))
		if err = errors.Join(err, cleanup()); err != nil {
			return nil, fmt.Errorf("%s: %w", variant, err)
		}
	}
	slices.Sort(times)
	return Metrics{"ns/op": float64(times[len(times)/2].Nanoseconds())}, nil
}

// copyDurably copies src to a new file dst, fsyncs it and its folder.
func copyDurably(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		return errors.Join(err, out.Close())
	}
	if err := errors.Join(out.Sync(), out.Close()); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(dst))
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
