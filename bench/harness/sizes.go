package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
)

// sizeRows are the rows of the bytes-on-disk table, by metric name.
var sizeRows = []struct{ metric, label string }{
	{"jsonl-B", "plain JSONL (one event per line)"},
	{"raw-B", "sessionlog raw (a Flush per turn)"},
	{"zstd-B", "sessionlog zstd, a frame per flush (a Flush per turn)"},
	{"recompressed-B", "sessionlog zstd, recompressed (`Compact`, the store's default level)"},
	{"zstd3-B", "`zstd -3` of the JSONL"},
	{"zstd19-B", "`zstd -19` of the JSONL"},
	{"snapshot-B", "a full snapshot per turn (transcript/v1 state rewritten each turn): file"},
	{"snapshot-written-B", "a full snapshot per turn: bytes written over the session"},
}

// runSizes writes the first turns of the workload every way sizeRows
// lists, in a folder under dir, and returns each size in bytes. Sizes do
// not depend on fsync, so the sessions are written without it. The
// snapshots are written (marshalled) every turn only when every is true;
// otherwise only the last one, for the file's size.
func runSizes(ctx context.Context, dir string, turns int, every bool) (Metrics, error) {
	evs := workload.Generate(workload.Config{Seed: 1, Turns: turns})
	var jsonl bytes.Buffer
	if err := workload.WriteJSONL(&jsonl, evs); err != nil {
		return nil, err
	}
	m := Metrics{"jsonl-B": float64(jsonl.Len()), "events": float64(len(evs))}
	fsys, _ := benchfs.New(true)
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		store := file.New(fsys, filepath.Join(dir, "sizes-"+enc), handle.WithEncoding(enc))
		id, err := writeSession(ctx, store, evs)
		if err != nil {
			return nil, err
		}
		info, err := store.Stat(ctx, id)
		if err != nil {
			return nil, err
		}
		m[enc+"-B"] = float64(info.SizeBytes)
		if enc == handle.EncodingZstd {
			if err := store.Compact(ctx, id); err != nil {
				return nil, err
			}
			if info, err = store.Stat(ctx, id); err != nil {
				return nil, err
			}
			m["recompressed-B"] = float64(info.SizeBytes)
		}
	}
	for _, level := range []int{3, 19} {
		n, tool, err := zstdSize(dir, jsonl.Bytes(), level)
		if err != nil {
			return nil, err
		}
		m[fmt.Sprintf("zstd%d-B", level)] = float64(n)
		m["zstd-cli"] = tool
	}
	t := projection.NewTranscript()
	var written, last int
	for i, e := range evs {
		t.Apply(eventToLog(e, int64(i)))
		if endOfTurn := i == len(evs)-1 || evs[i+1].Turn != e.Turn; endOfTurn && (every || i == len(evs)-1) {
			b, err := t.MarshalState()
			if err != nil {
				return nil, err
			}
			written += len(b)
			last = len(b)
		}
	}
	m["snapshot-B"] = float64(last)
	if every {
		m["snapshot-written-B"] = float64(written)
	}
	return m, nil
}

// zstdSize compresses data at level with the zstd command when it is
// installed (tool 1), or else with klauspost/compress's encoder at the
// level it maps that level to (tool 0), and returns the compressed size.
func zstdSize(dir string, data []byte, level int) (int64, float64, error) {
	if path, err := exec.LookPath("zstd"); err == nil {
		in := filepath.Join(dir, "sizes.jsonl")
		if err := os.WriteFile(in, data, 0o600); err != nil {
			return 0, 0, err
		}
		out, err := exec.Command(path, "-q", "-c", fmt.Sprintf("-%d", level), in).Output()
		if err != nil {
			return 0, 0, fmt.Errorf("zstd -%d: %w", level, err)
		}
		return int64(len(out)), 1, nil
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)))
	if err != nil {
		return 0, 0, err
	}
	defer enc.Close()
	return int64(len(enc.EncodeAll(data, nil))), 0, nil
}
