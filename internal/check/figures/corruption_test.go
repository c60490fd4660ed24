package figures_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

const storeDir = "/store"

// sampleEvent is event seq of the sample logs: a turn's worth of types,
// two chunks in a row (a packed row) in every five events.
func sampleEvent(seq int64) eventlog.Event {
	types := [...]string{"user/message", "assistant/chunk", "assistant/chunk", "tool/call", "tool/result"}
	return eventlog.Event{
		Type: types[seq%5],
		Time: 1764450000000 + seq,
		Data: json.RawMessage(fmt.Sprintf(`{"seq":%d,"text":"event %d of the sample"}`, seq, seq)),
	}
}

// sealIdentity is the identity the sealed samples are sealed for, and
// read with.
var sealIdentity = func() *age.X25519Identity {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		panic(err)
	}
	return id
}()

// sample is a log written by the store and what it holds.
type sample struct {
	name   string
	zstd   bool
	cps    bool
	sealed bool
	file   []byte
	path   string
	events []eventlog.Event
	hdr    eventlog.Header
	// cpRows are the seqs of the checkpoint rows.
	cpRows []int64
	// store is every other file the store holds beside the log (the
	// evidence of what was acknowledged among them), by path.
	store map[string][]byte
}

// writeSample writes a session of 40 events in 5 flushes (5 frames in
// zstd), with a checkpoint after the 2nd and the 4th flush when cps.
func writeSample(t *testing.T, enc string, cps, sealed bool) sample {
	t.Helper()
	ctx := t.Context()
	st := sampleStore(afero.NewMemMapFs())
	opts := []handle.Option{handle.WithEncoding(enc), handle.WithLabels(map[string]string{"agent": "figures"})}
	if sealed {
		opts = append(opts, handle.WithRecipients(sealIdentity.Recipient()))
	}
	h, err := st.Create(ctx, opts...)
	require.NoError(t, err)
	s := sample{zstd: enc == handle.EncodingZstd, cps: cps, sealed: sealed}
	for flush := range 5 {
		for range 8 {
			_, err := h.Append(ctx, sampleEvent(h.Seq()+1))
			require.NoError(t, err)
		}
		require.NoError(t, h.Flush(ctx))
		if cps && (flush == 1 || flush == 3) {
			info, err := checkpoint.Create(ctx, h, checkpoint.WithLabel("cp"),
				checkpoint.WithClock(func() time.Time { return time.UnixMilli(1764450099999) }))
			require.NoError(t, err)
			s.cpRows = append(s.cpRows, info.Seq)
		}
	}
	s.path, s.hdr = h.Path(), h.Header()
	require.NoError(t, h.Close())
	s.file, err = afero.ReadFile(st.Fs(), s.path)
	require.NoError(t, err)
	s.store = map[string][]byte{}
	require.NoError(t, afero.Walk(st.Fs(), storeDir, func(p string, info fs.FileInfo, err error) error {
		if err != nil || info.IsDir() || p == s.path {
			return err
		}
		s.store[p], err = afero.ReadFile(st.Fs(), p)
		return err
	}))
	require.NotEmpty(t, s.store, "the store keeps evidence beside the log")
	s.events = readAll(t, st, s.path)
	s.name = map[bool]string{false: "", true: "sealed "}[sealed] + map[bool]string{false: "raw", true: "zstd"}[s.zstd] +
		map[bool]string{false: "", true: " with checkpoints"}[cps]
	return s
}

// sampleStore is a store of the samples' folder on fsys, which reads the
// sealed ones.
func sampleStore(fsys afero.Fs) *file.Store {
	return file.New(fsys, storeDir, handle.WithIdentities(sealIdentity))
}

// readAll returns the events of the log at path, which must read clean.
func readAll(t *testing.T, st *file.Store, path string) []eventlog.Event {
	t.Helper()
	h, err := st.OpenPath(t.Context(), path)
	require.NoError(t, err)
	defer h.Close()
	var evs []eventlog.Event
	for e, err := range h.Read(t.Context(), 0, handle.End) {
		require.NoError(t, err)
		evs = append(evs, e)
	}
	return evs
}

// Outcomes of one damaged copy, in the order of the table.
const (
	corrupt   = "corruption"        // CheckPath fails: CorruptError, VersionError, a name that does not match
	noKey     = "envelope unusable" // CheckPath fails: no data key opens (a sealed log's key record damaged)
	digest    = "digest mismatch"   // reads, and checkpoint.Verify fails
	torn      = "torn tail"         // reads, ending in a torn tail that holds no event
	tornLost  = "torn, events cut"  // reads, ending in a torn tail that holds events
	harmless  = "unchanged"         // reads clean, every event and the header as written
	undetects = "undetected"        // reads clean with other events or another header
)

var outcomes = []string{corrupt, noKey, digest, torn, tornLost, harmless, undetects}

// classify reads the damaged copy file of s, alone in a store (no
// evidence of what was acknowledged) or, inStore, with the other files its
// store held, and returns what a reader makes of it.
func classify(ctx context.Context, s sample, file []byte, inStore bool) (string, error) {
	fsys := afero.NewMemMapFs()
	if err := afero.WriteFile(fsys, s.path, file, 0o600); err != nil {
		return "", err
	}
	for p, b := range s.store {
		if !inStore {
			break
		}
		if err := afero.WriteFile(fsys, p, b, 0o600); err != nil {
			return "", err
		}
	}
	st := sampleStore(fsys)
	check := st.CheckPath(ctx, s.path, nil)
	if errors.Is(check.Err, seal.ErrNoKey) {
		return noKey, nil
	}
	if check.Err != nil {
		return corrupt, nil
	}
	if check.Torn != nil {
		if check.Events < int64(len(s.events)) {
			return tornLost, nil
		}
		return torn, nil
	}
	h, err := st.OpenPath(ctx, s.path)
	if err != nil {
		return "", fmt.Errorf("CheckPath passed, OpenPath failed: %w", err)
	}
	defer h.Close()
	if _, err := checkpoint.Verify(ctx, h); err != nil {
		return digest, nil
	}
	var evs []eventlog.Event
	for e, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			return "", fmt.Errorf("CheckPath passed, Read failed: %w", err)
		}
		evs = append(evs, e)
	}
	same := len(evs) == len(s.events) && h.Header().ID == s.hdr.ID
	for i := 0; same && i < len(evs); i++ {
		same = evs[i].Seq == s.events[i].Seq && evs[i].Type == s.events[i].Type &&
			evs[i].Time == s.events[i].Time && bytes.Equal(evs[i].Data, s.events[i].Data)
	}
	if same {
		a, _ := json.Marshal(h.Header())
		b, _ := json.Marshal(s.hdr)
		same = bytes.Equal(a, b)
	}
	if same {
		return harmless, nil
	}
	return undetects, nil
}

// regions names the region of every byte of s's file: header, rows a
// checkpoint covers, checkpoint rows, rows after the last checkpoint (raw);
// the first frame (the header's), data frames, tail frames (zstd).
func regions(t *testing.T, s sample) []string {
	t.Helper()
	out := make([]string, len(s.file))
	if s.sealed {
		return sealedRegions(s)
	}
	if s.zstd {
		frames, end := zstdframe.Frames(bytes.NewReader(s.file), int64(len(s.file)))
		require.Equal(t, int64(len(s.file)), end)
		for i, f := range frames {
			name := "data frames"
			switch {
			case f.Skippable:
				name = "tail frames (skippable)"
			case i == 0:
				name = "first frame (header)"
			}
			for o := f.Offset; o < f.Offset+f.Len; o++ {
				out[o] = name
			}
		}
		return out
	}
	lastCP := int64(-1)
	if len(s.cpRows) > 0 {
		lastCP = s.cpRows[len(s.cpRows)-1]
	}
	start := 0
	for i, line := range bytes.SplitAfter(s.file, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		name := "header"
		if i > 0 {
			var row struct{ Seq int64 }
			require.NoError(t, json.Unmarshal(line, &row))
			switch {
			case slices.Contains(s.cpRows, row.Seq):
				name = "checkpoint rows"
			case row.Seq < lastCP:
				name = "rows a checkpoint covers"
			case len(s.cpRows) > 0:
				name = "rows after the last checkpoint"
			default:
				name = "rows (no checkpoint)"
			}
		}
		for o := start; o < start+len(line); o++ {
			out[o] = name
		}
		start += len(line)
	}
	return out
}

// TestCorruptionSweep flips every byte of four sample logs (raw and zstd,
// with and without checkpoints) under SESSIONLOG_SWEEPS=full, a sample of
// each region by default (flipOffsets), one bit each (bit offset%8; every
// bit under SESSIONLOG_SWEEPS=long), reads each damaged copy alone
// (no evidence of what was acknowledged), and counts per region what the
// reader made of it. The promise it asserts: nothing panics or fails in a
// way CheckPath did not report; no flip in a zstd log, and none in a raw
// row a checkpoint covers, is undetected; and every copy that reads as a
// torn tail alone is read again in its store, where no flip may cut an
// acknowledged event (the evidence turns such a tail into corruption).
//
// The sealed samples (docs/format.md §11) are swept the same way; every
// byte of a sealed log is authenticated or framing, so no flip anywhere
// in one may be undetected.
func TestCorruptionSweep(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
			for _, cps := range []bool{false, true} {
				s := writeSample(t, enc, cps, sealed)
				t.Run(strings.ReplaceAll(s.name, " ", "-"), func(t *testing.T) {
					t.Parallel()
					sweepSample(t, s)
				})
			}
		}
	}
}

// sealedRegions names the region of every byte of a sealed sample: the
// clear header, key records, the sealed header row, sealed rows (raw) or
// frames (zstd), the tail frame.
func sealedRegions(s sample) []string {
	out := make([]string, len(s.file))
	mark := func(from, to int, name string) {
		for o := from; o < to; o++ {
			out[o] = name
		}
	}
	data := "sealed rows"
	if s.zstd {
		data = "sealed frames"
		first := true
		for off := 0; off+8 <= len(s.file); {
			n := 8 + int(binary.LittleEndian.Uint32(s.file[off+4:]))
			name := map[uint32]string{0x184D2A5B: "clear header", 0x184D2A5C: "key records", 0x184D2A5D: data, 0x184D2A5E: "tail frame"}[binary.LittleEndian.Uint32(s.file[off:])]
			if name == data && first {
				name, first = "sealed header row", false
			}
			mark(off, off+n, name)
			off += n
		}
		return out
	}
	start, first := 0, true
	for i, line := range bytes.SplitAfter(s.file, []byte("\n")) {
		name := data
		switch {
		case i == 0:
			name = "clear header"
		case bytes.HasPrefix(line, []byte(`{"key":`)):
			name = "key records"
		case first:
			name, first = "sealed header row", false
		}
		mark(start, start+len(line), name)
		start += len(line)
	}
	return out
}

// regionSample is how many bytes of each region of a sample the sweep
// flips by default; tailSample, how many of the file's last bytes it flips
// all of (where a flip can leave a torn tail).
const regionSample, tailSample = 48, 256

// flipOffsets are the bytes of s the sweep flips: every one under
// SESSIONLOG_SWEEPS=full (internal/testkit/sweep); by default regionSample of each
// region, spread evenly, and the last tailSample bytes.
func flipOffsets(s sample, region []string) []int {
	if sweep.Full() {
		offs := make([]int, len(s.file))
		for i := range offs {
			offs[i] = i
		}
		return offs
	}
	byRegion := map[string][]int{}
	var names []string
	for off, r := range region {
		if byRegion[r] == nil {
			names = append(names, r)
		}
		byRegion[r] = append(byRegion[r], off)
	}
	keep := map[int]bool{}
	for _, r := range names {
		for _, i := range sweep.Points(len(byRegion[r]), regionSample, s.name+"/"+r) {
			keep[byRegion[r][i]] = true
		}
	}
	var offs []int
	for off := range s.file {
		if keep[off] || off >= len(s.file)-tailSample {
			offs = append(offs, off)
		}
	}
	return offs
}

func sweepSample(t *testing.T, s sample) {
	ctx := t.Context()
	region := regions(t, s)
	counts := map[string]map[string]int{}
	tornInStore := map[string]int{} // what the torn tails are with the store's evidence
	var order []string
	bits := 1
	if sweep.Long() {
		bits = 8
	}
	for _, off := range flipOffsets(s, region) {
		for b := range bits {
			bit := (off + b) % 8
			file := bytes.Clone(s.file)
			file[off] ^= 1 << bit
			got, err := classify(ctx, s, file, false)
			require.NoError(t, err, "byte %d bit %d", off, bit)
			r := region[off]
			if got == torn || got == tornLost {
				// In its store, the evidence of what was acknowledged
				// judges the tail: a tail that holds acknowledged events
				// is corruption.
				inStore, err := classify(ctx, s, file, true)
				require.NoError(t, err, "byte %d bit %d", off, bit)
				tornInStore[inStore]++
				if inStore == tornLost {
					t.Errorf("%s: the flip of bit %d of byte %d (%s) cuts acknowledged events in its store", s.name, bit, off, r)
				}
			}
			if counts[r] == nil {
				counts[r] = map[string]int{}
				order = append(order, r)
			}
			counts[r][got]++
			if got == undetects && (s.zstd || s.sealed || r == "rows a checkpoint covers") {
				t.Errorf("%s: the flip of bit %d of byte %d (%s) is undetected", s.name, bit, off, r)
			}
		}
	}
	for _, r := range order {
		total := 0
		var cells []string
		for _, o := range outcomes {
			total += counts[r][o]
		}
		for _, o := range outcomes {
			cells = append(cells, fmt.Sprintf("%s %d (%.1f%%)", o, counts[r][o], 100*float64(counts[r][o])/float64(total)))
		}
		figure(t, "corruption", "%s | %s | %d flips | %s", s.name, r, total, strings.Join(cells, " | "))
	}
	var cells []string
	for _, o := range outcomes {
		if tornInStore[o] > 0 {
			cells = append(cells, fmt.Sprintf("%s %d", o, tornInStore[o]))
		}
	}
	figure(t, "corruption", "%s | the torn tails, read in their store (with the evidence of what was acknowledged) | %s", s.name, strings.Join(cells, " | "))
}
