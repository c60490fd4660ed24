package logfile_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// rowSeq decodes line as one row, as a Reader started at a row boundary
// reads it, and returns its first seq.
func rowSeq(line []byte) (int64, bool) {
	r := eventlog.NewReader(bytes.NewReader(append(bytes.Clone(line), '\n')), eventlog.WithStart(0, logfile.AnySeq))
	if !r.Next() || r.Err() != nil {
		return 0, false
	}
	return r.Event().Seq, true
}

// nextRow is RowAfter by its definition: the first line that starts at or
// after off (and after the header's line), ends in '\n' by limit and
// decodes as a row.
func nextRow(data []byte, off, limit int64) (int64, int64, bool) {
	for start := int64(bytes.IndexByte(data, '\n') + 1); start > 0 && start < limit; {
		end := bytes.IndexByte(data[start:limit], '\n')
		if end < 0 {
			return 0, 0, false
		}
		if start >= off {
			if seq, ok := rowSeq(data[start : start+int64(end)]); ok {
				return start, seq, true
			}
		}
		start += int64(end) + 1
	}
	return 0, 0, false
}

// FuzzRowAfter holds RowAfter to its definition on any bytes (logs,
// damaged logs, noise) and any offset and limit.
func FuzzRowAfter(f *testing.F) {
	log := hdrLine + rows(0, 3) + packedRow(3, 4) + rows(7, 2)
	for _, s := range []string{log, log[:len(log)-5], hdrLine + "garbage\n" + rows(0, 2), hdrLine + "\x00\x00\n" + rows(5, 1), "", "\n\n\n"} {
		f.Add([]byte(s), uint16(0), uint16(len(s)))
		f.Add([]byte(s), uint16(len(s)/2), uint16(len(s)))
		f.Add([]byte(s), uint16(len(hdrLine)+3), uint16(len(s)-4))
	}
	f.Fuzz(func(t *testing.T, data []byte, off, limit uint16) {
		lim := min(int64(limit), int64(len(data)))
		rowOff, seq, found, err := logfile.RowAfter(bytes.NewReader(data), int64(off), lim)
		require.NoError(t, err)
		wantOff, wantSeq, wantFound := nextRow(data, max(int64(off), 1), lim)
		require.Equal(t, wantFound, found)
		if found {
			require.Equal(t, wantOff, rowOff)
			require.Equal(t, wantSeq, seq)
		}
	})
}

// FuzzFrameBefore: on a zstd log, the frame FrameBefore finds before the
// end of each frame is that frame, with the seqs of its rows; on damaged
// bytes it finds no frame or one that ends where it was asked to end and,
// for a data frame, holds the rows it says.
func FuzzFrameBefore(f *testing.F) {
	c := zCodec(f)
	for _, s := range zstdLogSeeds(f, c) {
		f.Add(s)
	}
	l := aheadLog(f, c)
	f.Add(l.data)
	f.Add(flip(l.data, l.offs[3]+7))
	f.Fuzz(func(t *testing.T, data []byte) {
		frames, _ := zstdframe.Frames(bytes.NewReader(data), int64(len(data)))
		hdr := int64(-1)
		for _, fr := range frames {
			if !fr.Skippable {
				hdr = fr.Offset
				break
			}
		}
		if hdr < 0 {
			return
		}
		res := readZBytes(t, c, data)
		valid := res.err == nil && res.torn == nil
		for _, want := range frames {
			if want.Offset <= hdr {
				continue
			}
			end := want.Offset + want.Len
			got, rows, _, err := logfile.FrameBefore(bytes.NewReader(data), end, hdr, int64(len(data)%3)*100, c)
			if err != nil {
				require.False(t, valid, "no frame found before offset %d of a valid log", end)
				continue
			}
			require.Equal(t, end, got.Offset+got.Len)
			require.GreaterOrEqual(t, got.Offset, hdr)
			if valid {
				require.Equal(t, want, got, "the frame before offset %d", end)
			}
			if got.Skippable || rows.Next == rows.First {
				continue
			}
			var seqs []int64
			r := eventlog.NewZstdReader(bytes.NewReader(data[got.Offset:end]), c, eventlog.WithStart(got.Offset, rows.First))
			for r.Next() {
				seqs = append(seqs, r.Event().Seq)
			}
			require.NoError(t, r.Err())
			require.NotEmpty(t, seqs)
			require.Equal(t, rows.First, seqs[0])
			require.Equal(t, rows.Next, r.NextSeq())
		}
	})
}
