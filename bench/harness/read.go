package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bytedance/sonic"
	gojson "github.com/goccy/go-json"
	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// The files of the read scenario, under the fixtures folder.
const (
	readStoreDir = "read-sessions" // a raw and a zstd session of the read workload
	readJSONL    = "read.jsonl"    // the same events as plain JSONL
	rawIDFile    = "read-raw.id"   // the raw session's ID
	zstdIDFile   = "read-zstd.id"  // the zstd session's ID
)

// decoders are the JSON libraries the JSONL alternatives decode with.
var decoders = []struct {
	name      string
	unmarshal func([]byte, any) error
}{
	{"encoding/json", json.Unmarshal},
	{"goccy/go-json", gojson.Unmarshal},
	{"bytedance/sonic", sonicCopying.Unmarshal},
}

// sonicCopying is sonic's default configuration with CopyString: the
// scanner reuses its buffer, and sonic's default strings point into it.
var sonicCopying = sonic.Config{CopyString: true}.Froze()

// projections are the folds the replay variants apply, by ID.
var projections = []struct {
	id  string
	new func() projection.Projection
}{
	{"agent/v1", func() projection.Projection { return projection.NewAgent() }},
	{"transcript/v1", func() projection.Projection { return projection.NewTranscript() }},
}

// readVariants lists the read scenario's variants: sessionlog's reads and
// replays, then each decoder alone and with each projection's apply.
func readVariants() []string {
	var out []string
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		out = append(out, "sessionlog "+enc+" read")
		for _, p := range projections {
			out = append(out, "sessionlog "+enc+" replay "+p.id)
		}
	}
	for _, d := range decoders {
		out = append(out, d.name+" decode")
		for _, p := range projections {
			out = append(out, d.name+" decode + "+p.id)
		}
	}
	return out
}

// jsonlEvent is a JSONL line as the alternatives model it.
type jsonlEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Time int64           `json:"time"`
	Data json.RawMessage `json:"data"`
}

// runRead runs one read variant reps times over the fixtures and returns
// the median time of one pass, events/s, MB/s of the workload's plain
// JSONL and the allocations per event. The handle is opened outside the
// timer.
func runRead(ctx context.Context, variant, fixtures string, reps int) (Metrics, error) {
	var pass func() (int, error)
	var closeFn func() error
	switch {
	case strings.HasPrefix(variant, "sessionlog "):
		f := strings.Fields(variant) // sessionlog <enc> read | sessionlog <enc> replay <projection>
		idFile := rawIDFile
		if f[1] == handle.EncodingZstd {
			idFile = zstdIDFile
		}
		id, err := os.ReadFile(filepath.Join(fixtures, idFile))
		if err != nil {
			return nil, err
		}
		store := file.New(afero.NewOsFs(), filepath.Join(fixtures, readStoreDir))
		h, err := store.Open(ctx, string(id), handle.ReadOnly)
		if err != nil {
			return nil, err
		}
		closeFn = h.Close
		if f[2] == "read" {
			pass = func() (int, error) {
				n := 0
				for e, err := range h.Read(ctx, 0, handle.End) {
					if err != nil {
						return n, err
					}
					sinkBytes += len(e.Data)
					n++
				}
				return n, nil
			}
		} else {
			newP, err := projectionNamed(f[3])
			if err != nil {
				return nil, errors.Join(err, h.Close())
			}
			pass = func() (int, error) {
				res, err := replay.Replay(ctx, h, []projection.Projection{newP()})
				return int(res.Events), err
			}
		}
	default:
		name, proj, _ := strings.Cut(variant, " decode")
		i := slices.IndexFunc(decoders, func(d struct {
			name      string
			unmarshal func([]byte, any) error
		}) bool {
			return d.name == name
		})
		if i < 0 {
			return nil, fmt.Errorf("harness: no read variant %q", variant)
		}
		var newP func() projection.Projection
		if proj = strings.TrimPrefix(proj, " + "); proj != "" {
			var err error
			if newP, err = projectionNamed(proj); err != nil {
				return nil, err
			}
		}
		pass = func() (int, error) {
			return decodePass(filepath.Join(fixtures, readJSONL), decoders[i].unmarshal, newP)
		}
		closeFn = func() error { return nil }
	}
	size, err := fileSizeOf(filepath.Join(fixtures, readJSONL))
	if err != nil {
		return nil, errors.Join(err, closeFn())
	}
	var times []time.Duration
	var events int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range reps {
		t0 := time.Now()
		n, err := pass()
		times = append(times, time.Since(t0))
		if err != nil {
			return nil, errors.Join(err, closeFn())
		}
		events = n
	}
	runtime.ReadMemStats(&after)
	if err := closeFn(); err != nil {
		return nil, err
	}
	slices.Sort(times)
	t := times[len(times)/2].Seconds()
	return Metrics{
		"ns/pass":      float64(times[len(times)/2].Nanoseconds()),
		"events":       float64(events),
		"events/s":     float64(events) / t,
		"MB/s":         float64(size) / t / 1e6,
		"allocs/event": float64(after.Mallocs-before.Mallocs) / float64(reps) / float64(max(events, 1)),
	}, nil
}

// sinkBytes keeps the compiler from dropping the work of a read.
var sinkBytes int

// decodePass reads the JSONL file line by line, decodes each line with
// unmarshal and, when newP is not nil, applies it to a new projection:
// what an application that keeps its session as JSONL does to resume.
func decodePass(path string, unmarshal func([]byte, any) error, newP func() projection.Projection) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var p projection.Projection
	if newP != nil {
		p = newP()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		var e jsonlEvent
		if err := unmarshal(sc.Bytes(), &e); err != nil {
			return n, fmt.Errorf("%s: line %d: %w", path, n+1, err)
		}
		if p != nil {
			p.Apply(eventlog.Event{Seq: e.Seq, Type: e.Type, Time: e.Time, Data: e.Data})
		} else {
			sinkBytes += len(e.Data)
		}
		n++
	}
	return n, sc.Err()
}

func projectionNamed(id string) (func() projection.Projection, error) {
	for _, p := range projections {
		if p.id == id {
			return p.new, nil
		}
	}
	return nil, fmt.Errorf("harness: no projection %q", id)
}

func fileSizeOf(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
